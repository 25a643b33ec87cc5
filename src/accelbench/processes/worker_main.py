"""`python -m accelbench.processes.worker_main READ_FD WRITE_FD`: a worker's loop (see workers.py).

Reads one call a line, `{"function": "module:name", "kwargs": {...}}`, runs it, and writes
`{"result": ...}` or `{"error": "Type: message"}` back (with `"user_code": true` where a user's
builder, loader or fit raised: the parent raises UserCodeFailed, which stops the run). It ends
when the parent closes the pipe, so a parent that dies without cleaning up does not leave it
waiting for ever.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from accelbench.user_modules import UserCodeFailed


def resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    try:
        result = resolve(request["function"])(**request.get("kwargs", {}))
        # a typed reply (protocol.Prepared, ...) crosses as its fields; Cellwork.reply rebuilds it
        return {"result": dataclasses.asdict(result) if dataclasses.is_dataclass(result) else result}
    except UserCodeFailed as error:  # a user's builder or fit: the run stops, as in the pytest process
        traceback.print_exc()
        return {"error": str(error), "user_code": True}
    except Exception as error:  # the call fails, the worker goes on
        traceback.print_exc()  # to the worker's log
        first_line = next(iter(str(error).splitlines()), "")[:300]
        return {"error": f"{type(error).__name__}: {first_line}"}


def main(argv: Sequence[str] | None = None) -> int:
    read_fd, write_fd = (int(fd) for fd in (argv if argv is not None else sys.argv[1:]))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with os.fdopen(read_fd, "r") as requests, os.fdopen(write_fd, "w", buffering=1) as replies:
        for line in requests:
            replies.write(json.dumps(answer(json.loads(line))) + "\n")
            replies.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
