"""Benchmark: what replying from a chat platform costs the adapters, per message.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/reply_records.py [--records 20000]``

Every message an adapter sends is recorded with the event it carried (``IngestLedger.
record_sent``: one SQLite insert and commit in ``ingest.sqlite``), and every platform message
that replies to another is looked up before it is posted (``ledger.sent_event``; for a reply
to a person's message, the session log's id index). Times are per call, the median and the
95th percentile of ``--records`` calls, on a ledger already holding that many records, in a
temporary folder on this machine's disk.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from framework.serving.ledger import IngestLedger
from framework.sessions.events import EventKind, client_event_id, make_event
from framework.sessions.jsonl_log import JsonlLog

SESSION = "room:slack-t0team1-c0desk"


def summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[int(len(ms) * 0.95) - 1]
    return f"| {name:<34} | {len(ms):>7,} | {statistics.median(ms):>8.3f} | {p95:>8.3f} |"


async def main(records: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ledger = await IngestLedger.open(Path(tmp) / "ingest.sqlite")
        recorded: list[float] = []
        for n in range(records):
            start = time.perf_counter()
            await ledger.record_sent(SESSION, f"slack-C0DESK-1800000000.{n:06d}", f"e{n}-msg")
            recorded.append(time.perf_counter() - start)
        found: list[float] = []
        for n in range(0, records * 2, 2):  # half of them sent, half never
            start = time.perf_counter()
            await ledger.sent_event(SESSION, f"slack-C0DESK-1800000000.{n:06d}")
            found.append(time.perf_counter() - start)
        await ledger.close()

        log = JsonlLog(Path(tmp) / "session.jsonl", durability="turn")
        for n in range(records):
            cid = client_event_id(f"slack-C0DESK-1700000000.{n:06d}")
            log.append(make_event(SESSION, EventKind.MESSAGE, "alice", "hi", id=cid))
        log.has("warm")  # the id index is built once per process, then kept up to date
        people: list[float] = []
        for n in range(0, records * 2, 2):
            cid = client_event_id(f"slack-C0DESK-1700000000.{n:06d}")
            start = time.perf_counter()
            log.has(cid)
            people.append(time.perf_counter() - start)
        log.close()

    print("| call                               |   calls | median ms |  p95 ms |")
    print("|------------------------------------|--------:|----------:|--------:|")
    print(summary("record_sent (per message sent)", recorded))
    print(summary("sent_event (per platform reply)", found))
    print(summary("log id lookup (reply to a person)", people))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    asyncio.run(main(parser.parse_args().records))
