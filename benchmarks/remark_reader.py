"""Benchmark: which ordinary messages does the remark reader's candidate rule send to a model?

Run: ``.venv/bin/python benchmarks/remark_reader.py [--show]``

Reads ``benchmarks/remark_corpus.jsonl`` (hand-written team chat, labelled ``ordinary`` or
``correction``, English and Chinese, each with its ``split``: ``dev`` to tune on, ``heldout``
to report) against the SOP steps in ``remark_corpus_sops.json``, and prints per language and
split:

* false-positive rate: ordinary messages :func:`framework.sop.remarks.is_candidate` marks as a
  candidate (each one would cost a model call and be shown back as "understood as: …");
* recall: free-word corrections it marks as a candidate (a miss is never read at all).

Goals (issue 21): FP ≤ 3 %, recall ≥ 90 % on the held-out splits. ``--show`` lists the
misreads (``--split dev`` those of one split only: look at a held-out split's misreads and it
is held out no more).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from framework.sop.model import Step
from framework.sop.remarks import is_candidate

HERE = Path(__file__).resolve().parent
SPLITS = ("dev", "heldout", "heldout2")
"""``dev`` to tune on; ``heldout`` written with it, before any tuning; ``heldout2`` written
after the first held-out figures were seen, before the rule was tuned again."""


def load_steps() -> dict[str, tuple[Step, ...]]:
    """The corpus SOPs' steps, by SOP id."""
    sops = json.loads((HERE / "remark_corpus_sops.json").read_text(encoding="utf-8"))
    return {
        sop: tuple(Step(speakers=tuple(s["speakers"]), do=s["do"]) for s in spec["steps"])
        for sop, spec in sops.items()
    }


def main() -> None:
    """Print the candidate rule's false-positive rate and recall per language and split."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list the misread messages")
    parser.add_argument("--split", action="append", help="list misreads of this split only")
    args = parser.parse_args()
    steps = load_steps()
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    lines = (HERE / "remark_corpus.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        row = json.loads(line)
        hit = is_candidate(row["text"], steps[row["sop"]])
        key = (row["lang"], row["split"], row["label"])
        counts[key][0] += hit
        counts[key][1] += 1
        if hit != (row["label"] == "correction") and row["split"] in (args.split or SPLITS):
            misses.append(f"  {row['split']:7} {row['label']:10} {row['text']}")
    print(f"{'lang':4} {'split':8} {'FP (ordinary)':>22} {'recall (corrections)':>24}")
    for lang in ("en", "zh"):
        for split in SPLITS:
            fp, n_o = counts[(lang, split, "ordinary")]
            tp, n_c = counts[(lang, split, "correction")]
            print(
                f"{lang:4} {split:8} {fp:>4}/{n_o:<4} = {fp / n_o:6.1%}"
                f" {tp:>6}/{n_c:<4} = {tp / n_c:6.1%}"
            )
    if args.show:
        print("misread:", *misses, sep="\n")


if __name__ == "__main__":
    main()
