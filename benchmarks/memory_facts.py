"""Benchmark: MEMORY.md never merges two facts into one, and a correction leaves no stale value.

Run: ``.venv/bin/python benchmarks/memory_facts.py [--facts 600] [--seed 7]``

It generates distinct facts in Chinese and English from a few sentence shapes (so many share a
shape and score 0.8-0.95 on text similarity), each fact knowing its own subject, and
fact/correction pairs (an attribute and its new value, said later, with other facts between).
A few facts are said twice, and one more file takes all the facts until its cap refuses
writes. Everything goes through the public API (``MemoryStore(...).memory(employee,
user).add``) into files of 20 facts each (one per user), as an employee's memory tool writes
them.

It judges by the generator's ground truth, never by what the memory module reports:

* wrong merges: generated distinct facts missing from the file afterwards (replaced by another);
* stale values: corrected attributes whose old value is still in what the prompt shows;
* lost corrections: corrected attributes whose new value is not there;
* exact duplicates: entries that appear twice in a file;
* over cap: files whose text exceeds the cap after any write;
* consolidation's rule (``framework.memory.supersede.rule_updates``, what offline consolidation
  uses to let a person's message replace an entry): how often it would let one distinct fact,
  said as a message, replace another fact of its file (must be 0), and how many corrections,
  said as messages, it finds the old value of.

Goals (issue 11): wrong merges 0, stale values 0, exact duplicates 0, never over the cap.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from framework.errors import MemoryCapExceeded
from framework.memory.store import MemoryStore
from framework.memory.supersede import KnownEntry, rule_updates
from framework.sessions.events import EventKind, make_event
from framework.settings import Settings

EN_NAMES = ["Sam", "Alice", "Bob", "Priya", "Chen", "Maria", "Omar", "Lena", "Kofi", "Yuki"]
ZH_NAMES = ["张伟", "李娜", "王芳", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴婷"]
EN_TOPICS = [
    "incident postmortem", "compliance audit", "design review", "load test", "release plan",
    "budget review", "security scan", "customer survey",
]  # fmt: skip
ZH_TOPICS = ["事故复盘", "合规审计", "设计评审", "压测报告", "发布计划", "预算评审", "安全扫描"]
STATES_EN = ["was filed late", "was approved", "needs a second pass"]
STATES_ZH = ["已经完成", "需要返工", "推迟了"]
ATTRS_EN = ["phone", "desk", "manager", "timezone", "laptop", "shift", "team", "office"]
ATTRS_ZH = ["工位", "电话", "上级", "时区", "值班时间", "负责模块", "邮箱", "办公室"]


def distinct_facts(n: int, rng: random.Random) -> list[str]:
    """``n`` different facts; shapes repeat, subjects (numbers, ids, names) do not."""
    shapes = [
        lambda: (
            f"On day {rng.randint(1, 400)}, {rng.choice(EN_NAMES)} noted that the "
            f"{rng.choice(EN_TOPICS)} {rng.choice(STATES_EN)}"
        ),
        lambda: f"Ticket INC-{rng.randint(100, 999)} is owned by {rng.choice(EN_NAMES)}",
        lambda: (
            f"{rng.choice(EN_NAMES)} moved the {rng.choice(EN_TOPICS)} to "
            f"{rng.randint(1, 28)} March"
        ),
        lambda: (
            f"第{rng.randint(1, 400)}天，{rng.choice(ZH_NAMES)}提到{rng.choice(ZH_TOPICS)}"
            f"{rng.choice(STATES_ZH)}"
        ),
        lambda: f"{rng.choice(ZH_NAMES)}负责{rng.choice(ZH_TOPICS)}的第{rng.randint(1, 9)}期",
        lambda: (
            f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日{rng.choice(ZH_NAMES)}要交"
            f"{rng.choice(ZH_TOPICS)}"
        ),
    ]
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen.setdefault(rng.choice(shapes)(), None)
    return list(seen)


def corrections(n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """``n`` (attribute, old entry, new entry) triples, each attribute once."""
    most = len(ZH_NAMES) * len(ATTRS_ZH) + len(EN_NAMES) * len(ATTRS_EN)
    if n > most:
        raise SystemExit(f"--pairs {n}: at most {most} distinct attributes can be generated")
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        i += 1
        if rng.random() < 0.5:
            attr = f"{rng.choice(ZH_NAMES)}的{rng.choice(ATTRS_ZH)}"
            old, new = f"{attr}：A{i}-{rng.randint(10, 99)}", f"{attr}：B{i}-{rng.randint(10, 99)}"
        else:
            attr = f"{rng.choice(EN_NAMES)}'s {rng.choice(ATTRS_EN)}"
            old, new = f"{attr}: old-{i}", f"{attr}: new-{i}"
        if attr not in seen:  # one correction per attribute: a second would be a new value
            seen.add(attr)
            out.append((attr, old, new))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=600)
    parser.add_argument("--pairs", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    facts = distinct_facts(args.facts, rng)
    pairs = corrections(args.pairs, rng)
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Settings(data_dir=Path(tmp)))
        started = time.perf_counter()
        wrong, stale, lost, dupes, over, refused, total = 0, 0, 0, 0, 0, 0, 0
        rule_wrong, rule_found = 0, 0
        per_file = 20
        chunks = [facts[i : i + per_file] for i in range(0, len(facts), per_file)]
        pair_chunks = [pairs[i :: len(chunks)] for i in range(len(chunks))]
        for n, (chunk, fixes) in enumerate(zip(chunks, pair_chunks, strict=True)):
            memory = store.memory("pm", f"user{n}")
            # Old values first, then the facts, then the corrections: others come between.
            # A few facts are said again at the end: they must not stack as duplicates.
            repeats = chunk[:: max(1, len(chunk) // 3)][:3]
            writes = [old for _, old, _ in fixes] + chunk + [new for _, _, new in fixes]
            writes += repeats
            total += len(writes)
            for entry in writes:
                try:
                    memory.add("facts", entry, source="benchmark")
                except MemoryCapExceeded:
                    refused += 1
                if len(memory.text()) > memory.cap:
                    over += 1
            shown = memory.read().sections["facts"]
            wrong += sum(1 for fact in chunk if fact not in shown)
            stale += sum(1 for _, old, _ in fixes if old in shown)
            lost += sum(1 for _, _, new in fixes if new not in shown)
            dupes += len(shown) - len(set(shown))
        took = time.perf_counter() - started
        for chunk, fixes in zip(chunks, pair_chunks, strict=True):  # untimed: no writes
            olds = [old for _, old, _ in fixes]
            rule_wrong += sum(bool(said(f, [e for e in chunk if e != f] + olds)) for f in chunk)
            rule_found += sum(said(new, [*chunk, old]) == [old] for _, old, new in fixes)
        # One file is filled past its cap: every write over it must be refused, none stored.
        full = store.memory("pm", "overflow")
        for entry in facts:
            try:
                full.add("facts", entry, source="benchmark")
            except MemoryCapExceeded:
                refused += 1
            if len(full.text()) > full.cap:
                over += 1
    print(f"{len(facts)} distinct facts in {len(chunks)} files, {len(pairs)} corrections")
    print(f"wrong merges: {wrong}")
    print(f"stale values in the prompt after a correction: {stale}")
    print(f"corrections lost: {lost}")
    print(f"exact duplicates: {dupes}")
    print(f"files over the cap after a write: {over} (writes the cap refused: {refused})")
    print(f"consolidation's rule: a fact replacing another: {rule_wrong}; ", end="")
    print(f"corrections it finds: {rule_found} of {len(pairs)}")
    print(f"{total} writes in {took:.1f} s ({1000 * took / total:.0f} ms each), then the cap file")
    met = wrong == stale == lost == dupes == over == rule_wrong == 0
    print(f"goals: {'all met' if met else 'NOT met'}")


def said(message: str, entries: list[str]) -> list[str]:
    """The entries offline consolidation would let ``message`` (said by u) replace."""
    event = make_event("dm:u@pm", EventKind.MESSAGE, "u", message, meta={"human": True})
    known = [KnownEntry("u", "facts", entry) for entry in entries]
    return [f.replaces.entry for f in rule_updates([event], {"u"}, known, set()) if f.replaces]


if __name__ == "__main__":
    main()
