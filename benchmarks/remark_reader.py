"""Benchmark: which ordinary messages does the remark reader's candidate rule send to a model?

Run: ``.venv/bin/python benchmarks/remark_reader.py [--show]``

Reads ``benchmarks/remark_corpus.jsonl`` (hand-written team chat, labelled ``ordinary`` or
``correction``, English and Chinese, each with its ``split``: ``dev`` to tune on, ``heldout``
to report) against the SOP steps in ``remark_corpus_sops.json``, and prints per language and
split:

* false-positive rate: ordinary messages :func:`framework.sop.remarks.is_candidate` marks as a
  candidate (each one would cost a model call and be shown back as "understood as: …");
* recall: free-word corrections it marks as a candidate (a miss is never read at all).

With ``--model URL`` (an OpenAI-compatible server, e.g. the tier's llama.cpp) it also asks that
model, as the room would (``read_remark.j2`` through
:func:`framework.sop.remark_reading.read_with_model`), to read every *ordinary* message the
rule lets through, and prints the share of all ordinary messages the model turned into a
correction ("understood as: …" shown in the room for nothing); ``--corrections`` also reads
the corrections that are candidates (the share read as a correction at all).

Goals (issue 21): FP ≤ 3 %, recall ≥ 90 % on the held-out splits. ``--show`` lists the
misreads (``--split dev`` those of one split only: look at a held-out split's misreads and it
is held out no more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from framework.models.factory import build_model
from framework.models.profile import profile_for
from framework.prompts.environment import PromptRenderer
from framework.sop.model import Step
from framework.sop.remark_reading import read_with_model
from framework.sop.remarks import is_candidate
from framework.specs.model_spec import ModelSpec

HERE = Path(__file__).resolve().parent
SPLITS = ("dev", "heldout", "heldout2")
"""``dev`` to tune on; ``heldout`` written with it, before any tuning; ``heldout2`` written
after the first held-out figures were seen, before the rule was tuned again."""


def load_rows() -> list[dict[str, str]]:
    """The corpus's labelled messages."""
    text = (HERE / "remark_corpus.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


async def read_by_model(args: argparse.Namespace, steps: dict[str, tuple[Step, ...]]) -> None:
    """Ask ``args.model`` to read the candidates; print the share read as corrections."""
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": args.model_name,
            "base_url": args.model,
            "system_role": args.system_role,
        }
    )
    model = build_model(spec, max_output_tokens=256)
    profile = profile_for(
        spec, label=args.model_name, context_window=4096, max_output_tokens=256, offline=False
    )
    renderer = PromptRenderer()
    labels = ("ordinary", "correction") if args.corrections else ("ordinary",)
    read: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in load_rows():
        key = (row["lang"], row["label"])
        if row["label"] not in labels:
            continue
        read[key][2] += 1
        sop_steps = steps[row["sop"]]
        if not is_candidate(row["text"], sop_steps):
            continue
        speakers = sorted({p for s in sop_steps for p in s.speakers})
        answer = await read_with_model(
            model,
            profile,
            renderer,
            ref=row["sop"],
            steps=sop_steps,
            employees=speakers,
            person="alice",
            text=row["text"],
        )
        read[key][0] += 1
        read[key][1] += bool(answer.value and answer.value.corrections)
        if args.show and row["label"] == "ordinary" and answer.value and answer.value.corrections:
            print(f"  read as a correction: {row['text']} -> {answer.raw[:120]}")
    print(f"model {args.model_name} at {args.model}")
    for (lang, label), (asked, corrections, total) in sorted(read.items()):
        print(
            f"{lang:4} {label:10} asked {asked:>4}/{total:<4}"
            f" read as a correction {corrections:>4} = {corrections / total:6.1%} of all"
        )


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
    parser.add_argument("--model", help="an OpenAI-compatible base URL to read candidates with")
    parser.add_argument("--model-name", default="local", help="the model's name on the server")
    parser.add_argument("--system-role", default="fold", help="system_role of the model spec")
    parser.add_argument("--corrections", action="store_true", help="also read the corrections")
    args = parser.parse_args()
    steps = load_steps()
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    for row in load_rows():
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
    if args.model:
        asyncio.run(read_by_model(args, steps))


if __name__ == "__main__":
    main()
