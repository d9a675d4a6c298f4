"""A writer process with a chosen lock: ``python lock_kind_writer_proc.py LOG NAME COUNT GO LOCK``.

Like ``jsonl_writer_proc.py`` (COUNT events authored by NAME, ``meta.seq`` = 0, 1, ..., once
the file GO exists), but with ``lock=LOCK``. A refused writer prints the StorageError to
stderr and exits 3, as a CLI would show it: no traceback.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import cast

from framework.errors import StorageError
from framework.sessions import EventKind, JsonlLog, LockKind, make_event

REFUSED = 3


def main() -> int:
    log_path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    log = JsonlLog(Path(log_path), lock=cast(LockKind, sys.argv[5]))
    try:
        log.has("warm-up")  # open and index before the start signal (refused if pinned)
        refused = None
    except StorageError as exc:
        refused = exc
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    try:
        if refused is not None:
            raise refused
        for seq in range(count):
            text = f"{name} #{seq}"
            log.append(make_event("room:mixed", EventKind.MESSAGE, name, text, meta={"seq": seq}))
        log.sync()
    except StorageError as exc:
        print(exc, file=sys.stderr)
        return REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
