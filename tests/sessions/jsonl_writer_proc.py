"""A writer process for the concurrency tests: ``python jsonl_writer_proc.py LOG NAME COUNT GO``.

Appends COUNT events authored by NAME (``meta.seq`` = 0, 1, ...) to LOG with the default
lock, starting once the file GO exists so that all writers overlap. COUNT 0 means forever.
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from framework.sessions import EventKind, JsonlLog, make_event


def main() -> None:
    log_path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    log = JsonlLog(Path(log_path))
    log.has("warm-up")  # open and index before the start signal
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    seqs = range(count) if count else itertools.count()
    for seq in seqs:
        text = f"{name} 写入第 {seq} 条 " + "·" * (seq % 50)
        log.append(make_event("room:stress", EventKind.MESSAGE, name, text, meta={"seq": seq}))
    log.sync()


if __name__ == "__main__":
    main()
