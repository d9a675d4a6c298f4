"""An English team's week (tests/english_week.py) on a real model, several times: the rates of
what depends on the model's wit, which the tier test reports but never asserts.

Usage (a llama.cpp server as tests/llm/serve.py starts it)::

    STAFFROOM_TEST_LLM_URL=http://127.0.0.1:PORT/v1 STAFFROOM_TEST_LLM_MODEL=gemma-3-270m-q4_k_m \\
        .venv/bin/python benchmarks/english_week.py [WEEKS]

Each week is a fresh ``staffroom init`` project. Printed per week and summed: ordinary replies
read as corrections (of those posted at the waits), whether maria's preference and her whole
name reached the lead's MEMORY.md, products written through the JSON tool protocol (of those
declared), fallbacks, search hits, the model calls and the time. The guarantees (rooms end,
no junk in MEMORY.md, no Han text in the prompts) are checked and printed as ok/FAILED too.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from english_week import Week, han_in, run_week_on


async def one_week(url: str, model: str, folder: Path) -> tuple[Week, int, float]:
    started = time.monotonic()
    week, requests, said_by_model = await run_week_on(url, model, folder)
    han = han_in(requests, said_by_model)
    ok = week.rooms_ended == [True, True] and not week.junk_in_memory() and not han
    print(f"  guarantees: {'ok' if ok else 'FAILED'} (rooms ended {week.rooms_ended}, ", end="")
    print(f"junk lines {len(week.junk_in_memory())}, Han characters in prompts {len(han)})")
    return week, len(requests), time.monotonic() - started


async def main(weeks: int) -> None:
    url = os.environ["STAFFROOM_TEST_LLM_URL"]
    model = os.environ.get("STAFFROOM_TEST_LLM_MODEL", "local")
    totals = {"ordinary": [0, 0], "preference": [0, 0], "name": [0, 0], "products": [0, 0]}
    for n in range(1, weeks + 1):
        with tempfile.TemporaryDirectory() as folder:
            week, calls, seconds = await one_week(url, model, Path(folder))
        print(f"week {n}: {week.rates()} — {calls} model calls, {seconds:.0f} s")
        totals["ordinary"][0] += week.ordinary_read_as_corrections
        totals["ordinary"][1] += week.ordinary_posted
        totals["preference"][0] += int(week.preference_kept)
        totals["name"][0] += int(week.whole_name_kept)
        totals["preference"][1] += 1
        totals["name"][1] += 1
        totals["products"][0] += len(week.products_via_json)
        totals["products"][1] += week.declared_products
    print(f"\n{weeks} weeks on {model}:")
    print(
        f"  ordinary replies read as corrections: {totals['ordinary'][0]}/{totals['ordinary'][1]}"
    )
    print(f"  preference kept: {totals['preference'][0]}/{totals['preference'][1]}")
    print(f"  whole name kept: {totals['name'][0]}/{totals['name'][1]}")
    print(f"  products via JSON tools: {totals['products'][0]}/{totals['products'][1]}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
