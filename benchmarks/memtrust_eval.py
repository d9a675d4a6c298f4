"""Benchmark: memtrust-cli's memory fixtures through Staffroom's memory write paths.

Run: ``.venv/bin/python benchmarks/memtrust_eval.py [--path tool|consolidation|unstated|all]``
(``--path model --url http://127.0.0.1:8799/v1``: consolidation by that server's model)

memtrust-cli (PyPI ``memtrust-cli``, a ``dev`` extra) ships hand-written fixtures that a memory
backend should get right: 15 extraction-quality records (boot logs, heartbeats, tracebacks,
JSON error bodies, invented profiles and acknowledgements to refuse; three standing facts to
keep) and 7 fact/correction pairs. Its own eval functions drive an adapter here, which hands
Staffroom *only each record's content*: the fixture's category travels in ``metadata``, which
the adapter ignores, and the per-case expectations are read only to print the table.

Each record goes through one write path, in a fresh folder:

* ``tool``: alice says the record in a DM and the employee's ``memory`` tool adds it to
  ``facts`` (what a model that saves everything would do);
* ``unstated``: the tool adds it while alice said nothing (a model inventing what it stores);
* ``consolidation``: alice's message and a reply are consolidated by the offline
  (extractive) path, which keeps what its rules recognise as durable;
* ``model``: the same, consolidated by a real model (``--url``), which sees alice's current
  entries numbered and may say which one a fact replaces (what it gets right is its wit).

A query returns what ``staffroom memory`` shows: MEMORY.md's entries and the superseded values
kept beside it (marked ``invalid_at``, which memtrust reads as a flagged conflict). A
contradiction case passes when MEMORY.md, which prompts carry, holds the new value and not the
old one, and the old one is kept as superseded.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

from memtrust.adapters.base import (
    ConflictSignal,
    DeleteResult,
    MemoryBackendAdapter,
    MemoryRecord,
    QueryResult,
    StoreResult,
    UpdateResult,
)
from memtrust.evals.contradiction import run_add_only_contradiction_eval
from memtrust.evals.extraction_quality import run_extraction_quality_eval

from framework.memory.consolidation import Consolidator, Summariser, extractive_summariser
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.memory_tool import memory_tool
from framework.memory.model_summary import model_summariser
from framework.models.factory import build_model
from framework.models.profile import profile_for
from framework.prompts.environment import PromptRenderer
from framework.sessions.events import EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.specs.model_spec import ModelSpec

PERSON, EMPLOYEE, SESSION = "alice", "pm", "dm:alice@pm"


class StaffroomMemory(MemoryBackendAdapter):
    """memtrust's adapter interface over one Staffroom write path (see the module docstring)."""

    supports_update = True

    def __init__(self, root: Path, path: str, summarise: Summariser | None = None) -> None:
        self.root, self.path, self.name = root, path, f"staffroom-{path}"
        self._ids = itertools.count(1)
        self.summarise = summarise or extractive_summariser({PERSON})

    def folder(self, session_id: str) -> Path:
        return self.root / self.path / session_id

    def memory(self, session_id: str) -> MemoryFile:
        return MemoryFile(self.folder(session_id) / "MEMORY.md")

    def store(
        self,
        session_id: str,
        content: str,
        metadata: dict[str, str] | None = None,  # the fixture's category: never read
        mode: str | None = None,
    ) -> StoreResult:
        folder = self.folder(session_id)
        folder.mkdir(parents=True, exist_ok=True)
        log = JsonlLog(folder / "session.jsonl")
        n = next(self._ids)
        if self.path != "unstated":
            human = {"human": True}
            log.append(
                make_event(SESSION, EventKind.MESSAGE, PERSON, content, id=f"m{n}", meta=human)
            )
        if self.path in ("consolidation", "model"):
            reply = make_event(SESSION, EventKind.MESSAGE, EMPLOYEE, "Noted.", id=f"r{n}")
            log.append(reply)
            asyncio.run(self._consolidate(folder, log))
        else:
            args = {"action": "add", "section": "facts", "content": content}
            tool = memory_tool(self.memory(session_id), source=SESSION, heard=_heard(log))
            asyncio.run(tool.call(args))
        return StoreResult(memory_id=f"{session_id}-{n}", latency_ms=0.0)

    async def _consolidate(self, folder: Path, log: JsonlLog) -> None:
        consolidator = Consolidator(
            log=log,
            history=HistorySummary(folder / "HISTORY.md"),
            memory_for=lambda _employee, _user: MemoryFile(folder / "MEMORY.md"),
            employees=[EMPLOYEE],
            window=20,
            summarise=self.summarise,
        )
        await consolidator.run(everything=True)

    def query(
        self, session_id: str, query: str, top_k: int = 5, mode: str | None = None
    ) -> QueryResult:
        memory = self.memory(session_id)
        doc = memory.read()
        records = [
            MemoryRecord(memory_id=f"{sid}-{i}", content=entry)
            for sid, entries in doc.sections.items()
            for i, entry in enumerate(entries)
        ]
        _, superseded = memory.facts.load()
        records += [
            MemoryRecord(
                memory_id=f"superseded-{i}",
                content=s.old,
                metadata={"invalid_at": s.date, "superseded_by": s.new},
            )
            for i, s in enumerate(superseded)
        ]
        return QueryResult(
            records=records, conflict_signal=ConflictSignal.NOT_APPLICABLE, latency_ms=0.0
        )

    def update(self, session_id: str, memory_id: str, content: str) -> UpdateResult:
        self.store(session_id, content)
        return UpdateResult(memory_id=memory_id, acknowledged=True, latency_ms=0.0)

    def delete(self, memory_id: str) -> DeleteResult:
        return DeleteResult(success=False, memory_id=memory_id, latency_ms=0.0)

    def prompt_text(self, session_id: str) -> str:
        """What a prompt carries: MEMORY.md."""
        return self.memory(session_id).text()


def _heard(log: JsonlLog) -> Any:
    """What the person said in the session (the transcript an entry is judged against)."""

    def heard() -> str:
        return "\n".join(e.text for e in log.read_all() if e.meta.get("human"))

    return heard


def extraction(adapter: StaffroomMemory) -> tuple[int, int, list[str]]:
    result = run_extraction_quality_eval(adapter)
    rows, passed = [], 0
    for r in result.case_results:
        ok = r.signal.value in ("retained_valid", "rejected_junk")
        passed += ok
        mark = "ok" if ok else "FAIL"
        rows.append(f"  {r.case.case_id}  {r.case.category:<20} {r.signal.value:<15} {mark}")
    return passed, len(result.case_results), rows


def contradiction(adapter: StaffroomMemory) -> tuple[int, int, list[str]]:
    result = run_add_only_contradiction_eval(adapter)
    rows, passed = [], 0
    for r in result.case_results:
        case = r.case
        prompt = adapter.prompt_text(case.session_id).lower()
        _, gone = adapter.memory(case.session_id).facts.load()
        kept_old = any(case.initial_value.lower() in s.old.lower() for s in gone)
        current = case.updated_value.lower() in prompt
        stale = case.initial_value.lower() in prompt
        ok = current and not stale and kept_old
        passed += ok
        how = "current only" if ok else ("both in prompt" if stale and current else "lost/stale")
        rows.append(f"  {case.case_id}  {case.subject:<22} memtrust={r.signal.value:<16} {how}")
    return passed, len(result.case_results), rows


MODEL_COUNTS = {"batches": 0, "fell back": 0, "facts": 0, "named an entry": 0}
"""What the model did on ``--path model`` (printed with the figures)."""


def model_path(url: str) -> Summariser:
    """Consolidation by the model at ``url`` (the real-model tier's window: 4,096 tokens)."""
    spec = ModelSpec.model_validate(f"openai:local@{url}")
    profile = profile_for(
        spec, label="local", context_window=4096, max_output_tokens=512, offline=False
    )
    model = build_model(spec, max_output_tokens=profile.max_output_tokens)
    summarise = model_summariser(model, PromptRenderer(), {PERSON}, profile, retries=1)

    async def counted(messages: list[Any], day: Any, known: Any) -> Any:
        summary = await summarise(messages, day, known)
        MODEL_COUNTS["batches"] += 1
        MODEL_COUNTS["fell back"] += summary.fallback is not None
        if summary.by_model:
            MODEL_COUNTS["facts"] += len(summary.facts)
            MODEL_COUNTS["named an entry"] += sum(f.replaces is not None for f in summary.facts)
        return summary

    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--path", choices=["tool", "unstated", "consolidation", "model", "all"], default="all"
    )
    parser.add_argument("--url", help="an OpenAI-compatible server, for --path model")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    paths = ["tool", "unstated", "consolidation"] if args.path == "all" else [args.path]
    if "model" in paths and not args.url:
        parser.error("--path model needs --url (an OpenAI-compatible server)")
    summarise = model_path(args.url) if "model" in paths else None
    figures: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            got, total, rows = extraction(StaffroomMemory(Path(tmp), path, summarise))
            print(f"extraction quality via {path}: {got} of {total} pass")
            print("\n".join(rows))
            figures[path] = {"extraction": f"{got}/{total}"}
            if path != "unstated":
                adapter = StaffroomMemory(Path(tmp) / "c", path, summarise)
                got, total, rows = contradiction(adapter)
                print(f"contradiction add-only via {path}: {got} of {total} current only")
                print("\n".join(rows))
                figures[path]["contradiction"] = f"{got}/{total}"
    if "model" in paths:
        print("model path: " + ", ".join(f"{k}: {v}" for k, v in MODEL_COUNTS.items()))
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
