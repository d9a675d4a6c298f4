"""A room run's outcome from its events: success, failures, corrections, duration, off-SOP turns.

It looks only at the events of one run (from the room's entry or its last outcome to the
end) and, for the files its steps declared they produce, at the room's workspace, so the
same history and files always give the same outcome.

Success needs evidence: a run whose completed steps did not leave the files they declare,
where an employee answered with nothing, or whose model errors were never recovered, is not
a success however smoothly the SOP ran; :attr:`Outcome.failures` says why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from framework.errors import WorkspaceEscapeError
from framework.language import snippet
from framework.phrases import Phrase
from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import ErrorPayload, StepPayload, ToolCallPayload, payload_of
from framework.sessions.workspace import Workspace
from framework.sop.corrections import parse_correction
from framework.sop.model import Correction, Outcome
from framework.sop.remarks import confirmed_corrections

# "评分: 4/5", "score 0.8", "打分 80%": a person's verdict on the run.
_SCORE = re.compile(
    r"(?:评分|打分|score|rating)\s*[:：=]?\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+)|(%))?", re.IGNORECASE
)
SUCCESS_AT = 0.6
"""A stated score at or above this counts as success."""
MADE_NO_TOOL_CALL = Phrase(
    en="{who} made no tool call",
    zh="{who} 没有调用任何工具",
)
CALLED_TOOLS = Phrase(
    en="{who} called {tools}",
    zh="{who} 调用了 {tools}",
)
# Why a run lacks evidence of work (Outcome.failures), in the room's language.
STEP_LACKS = Phrase(
    en="step {n} ({who}) {why}",
    zh="第 {n} 步（{who}）{why}",
)
NOT_PRODUCED = Phrase(
    en="did not produce {rel}",
    zh="没有产出 {rel}",
)
NOT_PRODUCED_TOOLS = Phrase(
    en="did not produce {rel} ({tools})",
    zh="没有产出 {rel}（{tools}）",
)
LEFT_EMPTY = Phrase(
    en="left {rel} empty",
    zh="产出的 {rel} 是空的",
)
OUTSIDE = Phrase(
    en="declares {rel}, which is outside the workspace",
    zh="声明的 {rel} 在工作区之外",
)
UNREADABLE = Phrase(
    en="produced {rel}, which cannot be read ({problem})",
    zh="产出的 {rel} 读不出来（{problem}）",
)
EMPTY_REPLY = Phrase(
    en="{who}'s reply{at} was empty",
    zh="{who} {at}的回复是空的",
)
MODEL_FAILED = Phrase(
    en="{who}'s model failed{at} and never recovered ({detail})",
    zh="{who} 的模型{at}出错，之后没有恢复（{detail}）",
)
AT_STEP = Phrase(
    en=" at step {n}",
    zh="在第 {n} 步",
)


def stated_score(text: str) -> float | None:
    """A 0..1 score stated in ``text`` ("评分: 4/5", "score 0.8", "打分 80%"), if any."""
    match = _SCORE.search(text)
    if not match:
        return None
    value = float(match.group(1))
    if match.group(2):
        value /= float(match.group(2)) or 1.0
    elif match.group(3) or value > 1:
        value /= 100 if match.group(3) or value > 10 else 10
    return max(0.0, min(1.0, value))


def _seconds(start: str, end: str) -> float:
    def parse(ts: str) -> datetime:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))

    return max(0.0, (parse(end) - parse(start)).total_seconds())


def _has_text(path: Path) -> bool:
    # Whitespace alone is no product; read in chunks: a real product ends it at the first.
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 16):
            if chunk.strip():
                return True
    return False


def _missing_product(workspace: Workspace, rel: str) -> tuple[Phrase, dict[str, str]] | None:
    """Why ``rel`` is no product (the phrase and its values: ``NOT_PRODUCED``,
    ``LEFT_EMPTY``, ...), or None if it is one."""
    try:
        path = workspace.resolve(rel)
        if not path.is_file():
            return NOT_PRODUCED, {"rel": rel}
        return None if _has_text(path) else (LEFT_EMPTY, {"rel": rel})
    except WorkspaceEscapeError:
        return OUTSIDE, {"rel": rel}
    except OSError as exc:
        return UNREADABLE, {"rel": rel, "problem": str(exc.strerror or exc)}


# Error kinds that mean "this turn produced nothing"; a later reply by the same employee
# at the same step recovers them. An empty answer may be recorded as an ``empty_reply``
# error (when the runtime retries it) or as a message with no text.
TURN_FAILURES = ("model_error", "empty_reply")


def _turn_failure(event: Event) -> str | None:
    said = payload_of(event)
    error = said.error if isinstance(said, ErrorPayload) else None
    return error if error in TURN_FAILURES else None


def _step_label(step: int | None, language: str) -> str:
    return AT_STEP(language, n=step) if step is not None else ""


def _unrecovered(error: Event, step: int | None, language: str) -> str:
    at = _step_label(step, language)
    if _turn_failure(error) == "empty_reply":
        return EMPTY_REPLY(language, who=error.author, at=at)
    said = payload_of(error)
    detail = snippet((said.detail if isinstance(said, ErrorPayload) else None) or "", 60)
    return MODEL_FAILED(language, who=error.author, at=at, detail=detail)


def _tool_calls_said(
    called: dict[tuple[str, int | None], list[str]], speakers: list[str], n: int, language: str
) -> str:
    """Whether the step's speakers called tools, for a missing product's line."""
    names = [name for s in speakers for name in called.get((s, n), [])]
    who = ", ".join(speakers)
    if not names:
        return MADE_NO_TOOL_CALL(language, who=who)
    counts = {name: names.count(name) for name in names}
    tools = ", ".join(f"{name} ×{c}" if c > 1 else name for name, c in counts.items())
    return CALLED_TOOLS(language, who=who, tools=tools)


def evidence_failures(
    events: Sequence[Event], workspace: Path | None, *, language: str = "en"
) -> list[str]:
    """Why the run lacks evidence of work (empty: nothing missing).

    In this order: each employee reply with no text; each ``model_error`` (or
    ``empty_reply`` error) after which the same employee never replied at that step again;
    then, step by step, each declared product of a completed step (every speaker replied)
    that is missing from ``workspace`` or empty. Products are not checked when
    ``workspace`` is None, nor for steps that did not complete: such a run did not complete
    the SOP anyway. A missing product's line says whether the step's speakers called any
    tool there (a model that never emits tool calls is told apart from a failed write).
    Each line is written in ``language`` (the room's: people read them).
    """
    failures: list[str] = []
    called: dict[tuple[str, int | None], list[str]] = {}
    started: dict[int, StepPayload] = {}
    replied: set[tuple[str, int | None]] = set()
    # (employee, step) -> its latest failed turn not yet followed by a reply of theirs there.
    unrecovered: dict[tuple[str, int | None], Event] = {}
    for event in events:
        step, payload = event.meta.get("step"), payload_of(event)
        if isinstance(payload, StepPayload):
            started[payload.number if payload.number is not None else int(step or 0)] = payload
        elif event.kind == EventKind.MESSAGE and not event.from_person:
            replied.add((event.author, step))
            unrecovered.pop((event.author, step), None)
            if not event.text.strip():
                at = _step_label(step, language)
                failures.append(EMPTY_REPLY(language, who=event.author, at=at))
        elif event.kind == EventKind.ERROR and _turn_failure(event):
            unrecovered[(event.author, step)] = event
        elif isinstance(payload, ToolCallPayload):
            called.setdefault((event.author, step), []).append(str(payload.name))
    failures += [_unrecovered(e, step, language) for (_, step), e in unrecovered.items()]
    if workspace is not None:
        files = Workspace(workspace)
        for n, started_step in sorted(started.items()):
            speakers = started_step.speakers
            if not all((s, n) in replied for s in speakers):
                continue  # the step did not complete in this run
            who = ", ".join(speakers)
            for rel in started_step.produces:
                if missing := _missing_product(files, rel):
                    phrase, values = missing
                    if phrase is NOT_PRODUCED:  # absent, not empty or unreadable: any tool call?
                        tools = _tool_calls_said(called, speakers, n, language)
                        phrase, values = NOT_PRODUCED_TOOLS, {**values, "tools": tools}
                    why = phrase(language, **values)
                    failures.append(STEP_LACKS(language, n=n, who=who, why=why))
    return failures


def correction_key(c: Correction) -> tuple[object, ...]:
    """What makes two corrections the same: kind, step, speaker, ``do`` (case and spacing
    aside) and ``before``; not who said it, nor the reason given."""
    return (c.kind, c.step, c.speaker, " ".join((c.do or "").casefold().split()), c.before)


def run_corrections(events: Sequence[Event]) -> tuple[Correction, ...]:
    """The run's corrections, each counted once, in the order first said.

    Two sources: every line of every message that is a correction in the structured form
    (:func:`~framework.sop.corrections.parse_correction`; a person's or an employee's, ``by``
    says whose), and the corrections of ``confirmed`` remark events (a free remark the room
    read, showed back, and its person confirmed; an understood remark never confirmed does
    not count). The same correction (:func:`correction_key`) said again in the run, or
    quoted by an employee on its own line, is not counted again; the first keeps its ``by``.
    """
    found: dict[tuple[object, ...], Correction] = {}
    for event in events:
        if event.kind == EventKind.MESSAGE:
            parsed = (parse_correction(line) for line in event.text.splitlines())
            said = [replace(c, by=event.author) for c in parsed if c is not None]
        else:  # a free remark its person confirmed: the reason says "confirmed by"
            said = [replace(c, confirmed=True) for c in confirmed_corrections(event)]
        for correction in said:
            found.setdefault(correction_key(correction), correction)
    return tuple(found.values())


def run_outcome(
    events: Sequence[Event],
    *,
    sop_ref: str,
    session: str,
    reason: str,
    workspace: Path | None = None,
    language: str = "en",
) -> Outcome:
    """The outcome of the run whose events are ``events`` (entry to end, in order).

    Corrections are :func:`run_corrections` (each counted once); they come from people and
    from models alike (an employee, say a reviewer, may write ``纠正: ...`` too); ``by`` tells
    them apart. ``failures`` lists what the run lacks as evidence of work
    (:func:`evidence_failures`, written in ``language``, the room's; products are looked up
    in ``workspace``, the room's workspace folder). A run with failures is never a success;
    otherwise success is a person's stated score when there is one, else: the SOP completed
    and nobody corrected it. Off-SOP turns are employee turns not driven by an SOP step.
    """
    messages = [e for e in events if e.kind == EventKind.MESSAGE]
    humans = [e for e in messages if e.from_person]
    # A message a schedule delivered here from another session is no turn of this run.
    replies = [e for e in messages if not e.from_person and "delivered" not in e.meta]
    corrections = run_corrections(events)
    score: float | None = None
    for message in humans:
        stated = stated_score(message.text)
        score = stated if stated is not None else score
    failures = evidence_failures(events, workspace, language=language)
    # A good score cannot stand in for missing work: evidence failures always fail the run.
    success = not failures and (
        score >= SUCCESS_AT if score is not None else (reason == "sop_complete" and not corrections)
    )
    return Outcome(
        sop_ref=sop_ref,
        session=session,
        success=success,
        score=score,
        corrections=corrections,
        duration_s=_seconds(events[0].ts, events[-1].ts) if events else 0.0,
        off_sop_turns=sum(1 for e in replies if e.meta.get("why") != "sop_step"),
        human_interventions=len(humans),
        user=humans[-1].author if humans else "",
        at=events[-1].ts if events else "",
        failures=tuple(failures),
    )
