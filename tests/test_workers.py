"""Worker processes: a call, a call that raises, a crash, a hang, a restart, and nothing left.

The worker runs functions of tests/worker_faults.py (planted crashes and hangs), found through
PYTHONPATH, one of environment B's variables: the same way a user's B differs from A.
"""

import os
import sys
import time
from pathlib import Path

import pytest

from accelbench.environments import Environment
from accelbench.plugin import options
from accelbench.processes import workers
from accelbench.processes.workers import WorkerFailed, WorkerPool

HERE = str(Path(__file__).parent)
B = Environment("B", sys.executable, (("PYTHONPATH", os.pathsep.join([HERE, *sys.path])), ("PLANTED", "yes")))
C = Environment("C", sys.executable, B.variables[:1])  # the same functions, PLANTED not set


@pytest.fixture
def pool(tmp_path):
    made = WorkerPool(tmp_path)
    yield made
    made.end()
    assert not [pid for pid in made.pids if workers.alive(pid)]


def test_a_call_runs_in_the_worker_with_its_own_variables(pool):
    assert pool.call(B, "worker_faults:variable", 30, name="PLANTED") == "yes"
    assert pool.call(B, "worker_faults:pid", 30) != os.getpid()


def test_the_worker_is_reused_across_calls(pool):
    first = pool.call(B, "worker_faults:pid", 30)
    assert pool.call(B, "worker_faults:pid", 30) == first
    assert pool.get(B).starts == 1


def test_call_each_runs_the_call_in_every_worker_at_once(pool, tmp_path):
    folder = tmp_path / "meeting"
    folder.mkdir()
    assert pool.call_each([B, C], "worker_faults:meet", 60, folder=str(folder), parties=2, timeout_s=30) == [True, True]


def test_call_each_awaits_every_answer_so_a_failure_on_one_side_leaves_the_other_in_step(pool):
    with pytest.raises(WorkerFailed, match="PLANTED is set here"):
        pool.call_each([B, C], "worker_faults:fail_where_set", 30, name="PLANTED")
    assert isinstance(pool.call(C, "worker_faults:pid", 30), int)  # its own answer, not C's None left unread
    assert pool.call(B, "worker_faults:variable", 30, name="PLANTED") == "yes"


def test_a_call_that_raises_fails_in_one_line_and_the_worker_goes_on(pool):
    first = pool.call(B, "worker_faults:pid", 30)
    with pytest.raises(WorkerFailed) as raised:
        pool.call(B, "worker_faults:fail", 30, message="no such model")
    assert str(raised.value).endswith("ValueError: no such model")
    assert "\n" not in str(raised.value)
    assert pool.call(B, "worker_faults:pid", 30) == first


def test_a_user_s_code_that_raises_in_the_worker_is_the_same_one_line_error_as_here(pool):
    """A user's builder that raises stops the run in the pytest process (plugin/hooks.py): where
    it raises in a worker, the parent raises the same UserCodeFailed, not a worker's failure."""
    from accelbench.user_modules import UserCodeFailed

    with pytest.raises(UserCodeFailed) as raised:
        pool.call(B, "worker_faults:fail_in_user_code", 30, message="no such layer")
    assert str(raised.value) == "model 'mine': its builder raised ValueError: no such layer"
    assert isinstance(pool.call(B, "worker_faults:pid", 30), int)  # the worker goes on


def test_a_crash_fails_the_call_in_one_line_and_the_next_call_restarts(pool):
    first = pool.call(B, "worker_faults:pid", 30)
    with pytest.raises(WorkerFailed) as raised:
        pool.call(B, "worker_faults:crash", 30)
    message = str(raised.value)
    assert "the worker died (exit status 3)" in message and "planted crash" in message
    assert "\n" not in message
    assert not workers.alive(first)
    assert pool.call(B, "worker_faults:pid", 30) != first
    assert pool.get(B).starts == 2


def test_a_worker_killed_like_the_oom_killer_says_so(pool):
    with pytest.raises(WorkerFailed, match="killed by SIGKILL - out of memory"):
        pool.call(B, "worker_faults:kill_self", 30)


def test_a_hang_is_killed_at_its_deadline(pool):
    hung = pool.call(B, "worker_faults:pid", 30)
    start = time.monotonic()
    with pytest.raises(WorkerFailed, match="no answer within its 2 s deadline; killed"):
        pool.call(B, "worker_faults:hang", 2)
    assert time.monotonic() - start < 10
    assert not workers.alive(hung)
    assert pool.call(B, "worker_faults:pid", 30) != hung


def test_a_hung_worker_s_children_die_with_it(pool):
    child = pool.call(B, "worker_faults:start_child", 30)
    with pytest.raises(WorkerFailed):
        pool.call(B, "worker_faults:hang", 1)
    deadline = time.monotonic() + 5
    while workers.alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not workers.alive(child)


def test_end_all_kills_every_process_left(tmp_path):
    pool = WorkerPool(tmp_path)
    pids = {pool.call(B, "worker_faults:pid", 30), pool.call(Environment("A"), "os:getpid", 30)}
    assert all(workers.alive(pid) for pid in pids)
    assert pids <= set(workers.end_all())
    assert not any(workers.alive(pid) for pid in pids)
    pool.end()  # closes the pipes of the processes end_all() killed


def test_a_worker_ends_when_its_parent_closes_the_pipe(pool):
    worker = pool.get(B)
    pid = pool.call(B, "worker_faults:pid", 30)
    worker._requests.close()
    worker.process.wait(timeout=10)
    assert not workers.alive(pid)


def test_bad_variables_are_refused_with_the_form_expected():
    assert options.variables("A=1, B_2=x=y") == (("A", "1"), ("B_2", "x=y"))
    assert options.variables("CUDA_VISIBLE_DEVICES=0,1,X=2") == (("CUDA_VISIBLE_DEVICES", "0,1"), ("X", "2"))
    for bad in ("A", "=1", "A B=1", ","):
        with pytest.raises(ValueError):
            options.variables(bad)


def test_workers_ask_malloc_for_huge_pages_unless_the_environment_says_otherwise(pool):
    assert "glibc.malloc.hugetlb=1" in pool.call(B, "worker_faults:variable", 30, name="GLIBC_TUNABLES")
    assert workers.huge_pages({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}) == {}
    assert workers.huge_pages({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == {
        "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    }


def test_a_typed_reply_crosses_a_real_worker_as_itself(pool):
    """cellwork's replies are dataclasses (protocol.Prepared, Described, ...): a worker
    sends their fields as JSON and Cellwork.reply rebuilds the same object on this side."""
    import worker_faults

    from accelbench.processes.protocol import REPLIES

    sent = worker_faults.typed_replies()
    assert [type(reply) for reply in sent] == list(REPLIES.values())
    for index, (call, reply) in enumerate(zip(REPLIES, sent)):
        wire = pool.call(C, "worker_faults:typed_reply", 30, index=index)
        assert isinstance(wire, dict)  # JSON on the pipe
        assert call.reply(wire) == reply
