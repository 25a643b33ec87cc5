"""Functions a test worker runs: what a healthy call, a failing one, a crash and a hang look like."""

import os
import signal
import subprocess
import sys
import time


def pid():
    return os.getpid()


def variable(name):
    return os.environ.get(name)


def fail(message):
    raise ValueError(message)


def fail_in_user_code(message: str):
    """A user's builder that raises, as accelbench's call_user reports it."""
    from accelbench.user_modules import call_user

    def builder():
        raise ValueError(message)

    return call_user("model 'mine': its builder", builder)


def crash():
    print("planted crash", file=sys.stderr, flush=True)
    os._exit(3)


def kill_self():
    os.kill(os.getpid(), signal.SIGKILL)


def hang():
    time.sleep(3600)


def start_child():
    """A process of the worker's own, as a distributed job would start."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"]).pid


def fail_where_set(name):
    """Raise in a worker whose environment sets `name`, answer None elsewhere."""
    if name in os.environ:
        raise ValueError(f"{name} is set here")


def meet(folder, parties, timeout_s):
    """Arrive in `folder` and wait there for `parties` workers in all: only calls that run at
    the same time can all meet; a worker called after another has returned would wait alone."""
    with open(os.path.join(folder, str(os.getpid())), "w"):
        pass
    end = time.monotonic() + timeout_s
    while len(os.listdir(folder)) < parties:
        if time.monotonic() > end:
            raise TimeoutError(f"{len(os.listdir(folder))} of {parties} workers came")
        time.sleep(0.01)
    return True


def jax_worker_settings():
    """What a JAX worker runs with: its matmul precision, XLA's preallocation, the device
    an array made under a "cpu" cell's placement lands on, and whether building and training a
    seeded model brought TensorFlow in."""
    import sys

    import jax
    import keras
    import numpy as np

    from accelbench.axes.backends import Neutral
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    placement = Neutral("cpu", "a CPU", "jax")
    with placement.scope():
        made_on = [str(device) for device in keras.ops.ones(2).devices()]
    model = build_model(MODELS["mlp"], (64,), ModelOptions(), placement.scope(), train=True)
    model.fit(np.zeros((8, 64), np.float32), np.zeros(8, np.int64), verbose=0)
    return {
        "matmul_precision": str(jax.config.jax_default_matmul_precision),
        "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
        "made_on": made_on,
        "backend": keras.backend.backend(),
        "tensorflow_imported": "tensorflow" in sys.modules,
    }


def typed_replies():
    """One of each typed cellwork reply, as cellwork's functions return them."""
    from accelbench.processes import protocol

    return [
        protocol.Prepared(0.5, 12, 384, 2.3e6, "cpu (2 cores)", False),
        protocol.Described("jax", True, {"jax": "0.10.2"}, "arch=x86_64; cpus=2"),
        protocol.StepTrace("t/tensorboard", "t/steps.trace.json", 5, [1.5, 1.25], "jax"),
    ]


def typed_reply(index):
    return typed_replies()[index]


def bare_loop_losses(steps):
    """The harness-overhead cell's bare loop on this worker's backend, on the mlp at batch 32:
    its loss at its first step and after `steps` more, and the trainer's fit() loss, which the
    bare loop must not have moved (it trains the trainer's model, or a copy of its state)."""
    from accelbench.axes import backends, data
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.training import HandLoop, Trainer

    placement = backends.inventory(backends.current()).get("cpu")
    dataset = data.load("digits", None)
    # a round of one step: the model has trained 2 steps in fit() and 1 in the bare loop's trace
    trainer = Trainer.build("bare loop", MODELS["mlp"], dataset, placement, 32, ModelOptions(), 0.01, steps=1)
    hand = HandLoop.like(trainer)
    first = hand.warm()
    hand.steps = steps
    for _ in range(3):
        last = hand.run_round()
    return {"first": first, "last": last, "samples_per_round": hand.steps * 32}


def resident_trainer(steps):
    """A trainer whose inputs were made resident on its device (the device speedup without the
    host-to-device copy), on this worker's backend, on the CPU: what its rounds are fed (the
    backend's own arrays, not NumPy's), and its loss before and after some rounds."""
    from accelbench.axes import backends, data
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.training import Trainer

    placement = backends.inventory(backends.current()).get("cpu")
    dataset = data.load("digits", None)
    trainer = Trainer.build(
        "resident", MODELS["mlp"], dataset, placement, 32, ModelOptions(), 0.01, steps, resident=True
    )
    fed = trainer.data.for_steps(steps)["x"]
    first = trainer.warm()
    for _ in range(5):
        last = trainer.run_round()
    return {"fed": f"{type(fed).__module__}.{type(fed).__name__}", "first": first, "last": last}
