"""An English team's first week, driven through the public API as a new user would.

A fresh ``staffroom init`` project (English) gets the support team's escalation scenario
(triage, on-call engineer, support lead; 4 steps, the third in parallel), then:

1. a room started with the ticket as its first message (``room.start(message=…)``), answered
   at its waits with plain replies ("Looks good, continue.");
2. a DM in which maria states a preference and her name, then a question; the DM is closed
   (the session end consolidates memory and extracts knowledge);
3. feedback on the ended room: a free remark and a typed correction;
4. a rerun of the scenario on the same ticket kind;
5. a knowledge search.

Shared by the real-model tier (tests/llm/test_english_week_llm.py), its offline twin on the
recording stub (tests/e2e/test_english_week.py) and ``benchmarks/english_week.py`` (rates over
several weeks). :func:`run_week` only drives and measures; the callers assert.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paths import ROOT
from stub_openai import StubOpenAI

from framework import Event, EventKind, Room, Settings, Staffroom
from framework.models.json_tools import PROTOCOL
from framework.sessions.keys import SessionKey
from framework.specs.model_spec import ModelSpec
from framework.surfaces.cli.init import scaffold

HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
# What a prompt example's placeholders and a timestamp-as-value look like when echoed.
PLACEHOLDER = re.compile(r"(?im)^\s*-?\s*(key\s*:\s*text|<[a-z_ ]+>|\{[a-z_]+\})\s*$")
TIMESTAMP_VALUE = re.compile(r"(?m):\s*\d{4}-\d{2}-\d{2}[ T]\d{2}[.:]\d{2}([.:]\d{2})?\s*$")

TICKET = (
    "Ticket #4411 from Acme Corp - checkout API returns HTTP 502 for about 30% of requests "
    "since 09:40 UTC. They are on the Enterprise plan (4-hour response promise)."
)
SECOND_TICKET = (
    "Ticket #4420 from Globex - password reset emails arrive 20 minutes late since this "
    "morning. Standard plan."
)
# Plain replies at the waits: ordinary messages, never corrections.
# The first names a step's work ("write the reply") without asking to change the SOP: the
# candidate rule passes it to the reader, which must not count it.
ORDINARY = [
    "Looks good, continue. Please write the reply before lunch.",
    "The reply is fine, send it.",
    "Continue please.",
]
DM_LINES = [
    "I prefer answers in bullet points.",
    "My name is Maria Chen.",
    "What should I tell Acme about the 502 errors today?",
]
PREFERENCE = "bullet"
NAME = "Maria Chen"
# Said at the rerun's pause: an approval with a free remark in it (a candidate for the reader).
MIXED = "Looks good. Next time triage should quote the ticket's own words first."
REMARK = "Next time the lead should check the customer's plan before writing the reply."
CORRECTION = (
    'correction: missing lead "Check the customer\'s plan and its response-time promise" before 4'
)
SEARCH = "checkout 502"
WINDOW = 4096  # the tier server's --n_ctx (tests/llm/serve.py)
CAP = 192  # answers: room for a product through the JSON protocol, short enough to be quick
MAX_POSTS = 8


@dataclass
class Week:
    """What happened, kept for the caller to assert on or to count."""

    events: list[Event] = field(default_factory=list)
    rooms_ended: list[bool] = field(default_factory=list)
    wait_reasons: list[str] = field(default_factory=list)
    ordinary_posted: int = 0
    ordinary_read_as_corrections: int = 0
    declared_products: int = 0
    products_via_json: list[str] = field(default_factory=list)
    memory_md: str = ""
    history_md: str = ""
    search_hits: int = 0
    sops: list[str] = field(default_factory=list)

    @property
    def fallbacks(self) -> list[Event]:
        return [e for e in self.events if e.kind == EventKind.FALLBACK]

    @property
    def preference_kept(self) -> bool:
        return PREFERENCE in self.memory_md.lower()

    @property
    def whole_name_kept(self) -> bool:
        return NAME in self.memory_md

    def junk_in_memory(self) -> list[str]:
        """Lines of MEMORY.md that are an echoed placeholder or a timestamp as a value."""
        lines = self.memory_md.splitlines()
        return [ln for ln in lines if PLACEHOLDER.search(ln) or TIMESTAMP_VALUE.search(ln)]

    def rates(self) -> dict[str, Any]:
        """What depends on the model's wit, as figures (reported, never asserted)."""
        return {
            "ordinary messages read as corrections": (
                f"{self.ordinary_read_as_corrections}/{self.ordinary_posted}"
            ),
            "preference kept": self.preference_kept,
            "whole name kept": self.whole_name_kept,
            "products written via JSON tools": (
                f"{len(self.products_via_json)}/{self.declared_products}"
            ),
            "fallbacks": len(self.fallbacks),
            "search hits": self.search_hits,
        }


def make_project(target: Path) -> Path:
    """``staffroom init`` (English), then the edit a support team makes: their escalation
    scenario, its three employees on the project's ``default`` model, and its SOP."""
    scaffold(target, ModelSpec(provider="simulated"), language="en")
    shutil.copy(ROOT / "scenarios" / "escalation.yaml", target / "scenarios" / "escalation.yaml")
    for name in ("triage", "oncall", "lead"):
        text = (ROOT / "agents" / f"{name}.yaml").read_text(encoding="utf-8")
        text = text.replace("model: simulated", "model: default")
        (target / "agents" / f"{name}.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(ROOT / "sop_library" / "escalation", target / "sop_library" / "escalation")
    return target


def settings_for(project: Path, spec: dict[str, Any], **extra: Any) -> Settings:
    """The project's settings with every employee on ``spec`` (an OpenAI-compatible server)."""
    return Settings(
        data_dir=project / ".staffroom",
        project_dir=project,
        allow_network=False,  # loopback only
        model_override=ModelSpec.model_validate({"provider": "openai", **spec}),
        model_backoff=0.2,
        **extra,
    )


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def drive(
    room: Room, events: list[Event], week: Week, first: str | None = None
) -> list[Event]:
    """Answer the room's waits until it ends: ``first`` (if given) then plain replies at a
    step's pause, a retry after a model error. Never more than MAX_POSTS answers (a room that
    needs more is stuck)."""
    for n in range(MAX_POSTS):
        status = await room.status()
        if not status.waiting:
            break
        week.wait_reasons.append(status.wait_reason or "")
        if status.wait_reason == "model_error":
            events += await collect(room.retry())
            continue
        line = first if first is not None and n == 0 else ORDINARY[n % len(ORDINARY)]
        said = await collect(room.post(line, author="maria"))
        events += said
        if line in ORDINARY:
            week.ordinary_posted += 1
            understood = [e for e in said if e.kind == EventKind.REMARK]
            if any(e.content.get("status") == "understood" for e in understood):
                week.ordinary_read_as_corrections += 1
    week.rooms_ended.append(any(e.kind == EventKind.OUTCOME for e in events))
    return events


def count_products(staff: Staffroom, room: Room, events: list[Event], week: Week) -> None:
    written = set(staff.sessions.workspace(SessionKey.parse(room.key)).list_files())
    for step in (e for e in events if e.kind == EventKind.SOP_STEP):
        for path in step.content.get("produces") or []:
            week.declared_products += 1
            by_json = any(
                e.kind == EventKind.TOOL_CALL
                and e.content.get("protocol") == PROTOCOL
                and (e.content.get("args") or {}).get("path") == path
                for e in events
            )
            if path in written and by_json:
                week.products_via_json.append(path)


async def run_week(staff: Staffroom) -> Week:
    """Drive the week (see the module docstring) and measure it."""
    week = Week()
    # Day 1: the ticket opens the room; plain replies at its waits.
    room = await staff.room("acme-4411", "escalation")
    events = await drive(room, await collect(room.start(message=TICKET, author="maria")), week)
    count_products(staff, room, events, week)
    week.events += events
    # Day 2: maria tells the lead about herself in a DM; the DM is closed.
    dm = await staff.dm("lead", "maria")
    for line in DM_LINES:
        await collect(dm.post(line, author="maria"))
    await dm.close()
    await dm.drain()  # the session end's background work (consolidation, extraction)
    week.events += dm.history()  # with what the session end appended (refusals included)
    # Day 3: feedback on the ended room, a free remark then a typed correction.
    week.events += await collect(room.post(REMARK, author="maria"))
    week.events += await collect(room.post(CORRECTION, author="maria"))
    # Day 4: the next ticket, in a new room.
    rerun = await staff.room("globex-4420", "escalation")
    started = await collect(rerun.start(message=SECOND_TICKET))
    events = await drive(rerun, started, week, first=MIXED)
    count_products(staff, rerun, events, week)
    week.events += events
    # Day 5: what the team can find again.
    week.search_hits = len((await staff.knowledge.search(SEARCH, employee="lead")).hits)
    week.memory_md = staff.memory.memory("lead", "maria").path.read_text(encoding="utf-8")
    history = staff.memory.history(dm.key)
    week.history_md = history.path.read_text(encoding="utf-8") if history.path.exists() else ""
    versions = await staff.sops.store.versions("escalation")
    week.sops = [f"escalation@{v.version} {v.status}" for v in versions]
    return week


async def run_week_on(url: str, model: str, folder: Path) -> tuple[Week, list[dict[str, Any]], str]:
    """The week in a fresh project under ``folder`` on the OpenAI-compatible server at ``url``,
    every request through the recording proxy: the week, the request bodies the model got and
    what the model said (for :func:`han_in`)."""
    project = make_project(folder / "team")
    with StubOpenAI(upstream=url) as proxy:
        spec = {
            "name": model,
            "base_url": proxy.base_url,
            "context_window": WINDOW,
            "max_output_tokens": CAP,
            "system_role": "fold",
        }
        async with await Staffroom.open(settings=settings_for(project, spec)) as staff:
            week = await run_week(staff)
        return week, [r.body for r in proxy.completions], model_text(proxy.forwarded)


def han_in(requests: list[dict[str, Any]], said_by_model: str = "") -> list[str]:
    """Han text in the message contents of recorded chat-completion request bodies, except
    runs the model itself wrote (``said_by_model``: its answers, which later prompts carry as
    the room's history; a weak model sometimes answers an English room in kanji)."""
    found = []
    for body in requests:
        for message in body.get("messages", []):
            content = message.get("content")
            text = content if isinstance(content, str) else str(content or "")
            found += [run for run in HAN_RUN.findall(text) if run not in said_by_model]
    return found


def model_text(answers: list[Any]) -> str:
    """Everything a server's chat-completion ``answers`` said: contents and tool arguments."""
    parts = []
    for answer in answers:
        for choice in (answer or {}).get("choices", []):
            message = choice.get("message") or {}
            content = str(message.get("content") or "")
            parts.append(content)
            with contextlib.suppress(ValueError):  # a JSON answer may escape what it says
                parts.append(json.dumps(json.loads(content), ensure_ascii=False))
            for call in message.get("tool_calls") or []:
                parts.append(str((call.get("function") or {}).get("arguments") or ""))
    return "\n".join(parts)
