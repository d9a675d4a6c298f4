"""A room's log holding every event kind, in the shapes the framework writes them.

Each content below is copied from the code that writes it (named beside it), with the
variants people see: a late feedback (fewer fields), a revision that only reports
conflicts, an extraction that found nothing, a remark understood, confirmed and dropped, a
legacy ``plan`` event holding an outcome. ``tests/viewer/test_viewer_people.py`` shows it in
the viewer and checks that each reads as a sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from framework.sessions.events import Event, EventKind

KEY = "room:every-kind"
EPOCH = "ep01"
T0 = "2026-12-02T09:15:00.000Z"
"""The first event's time (UTC); the page must show it in the reader's time zone."""
MODEL = "openai:gemma-3-270m"
"""The label a real-model reply carries in ``meta.model``."""
TRIAL = {
    "tech-article": {
        "arm": "trial",
        "trial": "tech-article@1",
        "best": "tech-article@2",
        "share": 0.5,
    }
}

STEPS = [
    {"n": 1, "speakers": ["pm"], "do": "Triage the ticket", "waits_for_input": False},
    {
        "n": 2,
        "speakers": ["engineer"],
        "do": "Diagnose and write diagnosis.md",
        "waits_for_input": True,
    },
]


def _events() -> list[tuple[EventKind, str, Any, dict[str, Any]]]:
    """(kind, author, content, meta) in log order."""
    failures = ["step 2 did not produce diagnosis.md (the model made no tool call)"]
    return [
        # runtime/graph.py enter()
        (
            EventKind.PLAN,
            "system",
            {
                "scenario": "tech-article",
                "scenario_source": "scenarios/tech_article.yaml",
                "title": "Customer escalation",
                "announcement": "Goal: answer Acme's ticket within the hour.",
                "sop": "tech-article@1",
                "participants": ["pm", "engineer"],
                "humans": ["author"],
                "sop_trials": TRIAL,
            },
            {"entry": True, "sop": "tech-article@1", "sop_trial": True, "steps": STEPS},
        ),
        (EventKind.MESSAGE, "author", "Ticket #4411: checkout returns HTTP 502.", {"human": True}),
        # runtime/graph.py _route(): the step's state dict
        (EventKind.SOP_STEP, "system", STEPS[0], {"sop": "tech-article@1", "step": 1}),
        # runtime/turn.py
        (
            EventKind.TOOL_CALL,
            "engineer",
            {
                "name": "write_file",
                "args": {"path": "diagnosis.md", "content": "x"},
                "call_id": "c1",
            },
            {"why": "sop_step", "model": MODEL, "sop": "tech-article@1", "step": 2},
        ),
        (
            EventKind.TOOL_RESULT,
            "engineer",
            {
                "name": "write_file",
                "call_id": "c1",
                "ok": True,
                "output": "wrote diagnosis.md (1 characters)",
            },
            {"why": "sop_step", "model": MODEL},
        ),
        (
            EventKind.TOOL_RESULT,
            "engineer",
            {
                "name": "read_file",
                "call_id": "c2",
                "ok": False,
                "output": "Error: no file notes.md",
            },
            {"why": "sop_step", "model": MODEL},
        ),
        (
            EventKind.MESSAGE,
            "engineer",
            "The 502 comes from the payment gateway timing out.",
            {
                "why": "sop_step",
                "model": MODEL,
                "sop": "tech-article@1",
                "step": 2,
                "usage": {"calls": 1, "input_tokens": 900, "output_tokens": 40, "model_s": 97.2},
            },
        ),
        (EventKind.MESSAGE, "pm", "Noted.", {"why": "mention", "model": "simulated"}),
        (
            EventKind.ERROR,
            "engineer",
            {
                "error": "model_error",
                "kind": "timeout",
                "detail": "no answer in 120 s",
                "attempts": 3,
            },
            {"why": "sop_step", "model": MODEL},
        ),
        (
            EventKind.ERROR,
            "engineer",
            {"error": "empty_reply", "detail": "the model said nothing"},
            {},
        ),
        (
            EventKind.ERROR,
            "engineer",
            {"error": "unknown_tool", "detail": "Error: unknown tool 'x'."},
            {},
        ),
        (
            EventKind.ERROR,
            "system",
            {"error": "hook_failed", "hook": "remember", "detail": "disk full"},
            {"point": "reply"},
        ),
        # runtime/graph.py _unmentioned(), sop/run_remarks.py _fallback()
        (
            EventKind.FALLBACK,
            "system",
            {"what": "selector", "used": "round_robin", "reason": "the selector model timed out"},
            {},
        ),
        (
            EventKind.FALLBACK,
            "system",
            {"what": "remark", "used": "not counted", "reason": "the answer was not JSON"},
            {},
        ),
        # runtime/graph.py human()
        (
            EventKind.WAIT,
            "system",
            {"waiting_for": ["author"], "reason": "waits_for_input", "after_step": 2},
            {},
        ),
        (
            EventKind.WAIT,
            "system",
            {
                "waiting_for": ["author"],
                "reason": "model_error",
                "after_step": 1,
                "error": "timeout",
            },
            {},
        ),
        (
            EventKind.WAIT,
            "system",
            {
                "waiting_for": ["author"],
                "reason": "interrupted",
                "after_step": None,
                "dropped": ["pm"],
            },
            {},
        ),
        # sop/run_remarks.py read_remark() and _settle()
        (
            EventKind.REMARK,
            "system",
            {
                "status": "understood",
                "by": "author",
                "remark": "m1",
                "read_by": f"model:{MODEL}",
                "english": True,
                "corrections": [{"kind": "order", "step": 2, "before": 1}],
                "told": "step 2 (Diagnose) before step 1",
                "text": "understood as: step 2 (Diagnose) before step 1",
                "ask": "Reply to this remark with yes to count it.",
            },
            {},
        ),
        (
            EventKind.REMARK,
            "system",
            {
                "status": "confirmed",
                "by": "author",
                "understood": "x",
                "text": "confirmed, counted in this run: step 2 before step 1",
                "english": True,
                "corrections": [],
            },
            {},
        ),
        (
            EventKind.REMARK,
            "system",
            {"status": "none", "by": "author", "remark": "m2", "english": True, "corrections": []},
            {},
        ),
        # sop/run_feedback.py close_run(), _report(), late_feedback()
        (
            EventKind.FEEDBACK,
            "system",
            {
                "sop": "tech-article@1",
                "success": False,
                "score": None,
                "corrections": 1,
                "off_sop_turns": 0,
                "human_interventions": 2,
                "duration_s": 0.0,
                "failures": failures,
                "at": T0,
                "reason": "sop_complete",
                "people": ["author"],
            },
            {"sop": "tech-article@1"},
        ),
        (
            EventKind.REVISION,
            "system",
            {
                "sop": "tech-article@2",
                "status": "draft",
                "why": "1 run, confirmed by author",
                "edits": ["move step 2 before step 1"],
                "reviewers": ["lead"],
                "conflicts": [],
                "reselected": False,
            },
            {"sop": "tech-article@1"},
        ),
        (
            EventKind.REVISION,
            "system",
            {"sop": "tech-article@1", "conflicts": ["author and lead ask for opposite orders"]},
            {"sop": "tech-article@1"},
        ),
        (
            EventKind.FEEDBACK,
            "system",
            {
                "sop": "tech-article@1",
                "success": True,
                "score": 4,
                "corrections": 1,
                "late": True,
                "run": "x",
            },
            {"sop": "tech-article@1"},
        ),
        # sop/run_feedback.py save_as_sop()
        (
            EventKind.EXTRACTION,
            "system",
            {
                "extracted": "tech-article@3",
                "status": "draft",
                "steps": ["pm: Triage the ticket", "engineer: Diagnose"],
                "review": "staffroom sop show tech-article@3",
            },
            {"sop": "tech-article@3"},
        ),
        (
            EventKind.EXTRACTION,
            "system",
            {"extracted": None, "why": "no employee turn to learn from yet"},
            {"sop": None},
        ),
        # runtime/graph.py _finish()
        (
            EventKind.OUTCOME,
            "system",
            {
                "reason": "sop_complete",
                "sop": "tech-article@1",
                "steps_done": 2,
                "steps_total": 2,
                "turns": 3,
            },
            {"sop": "tech-article@1"},
        ),
        # a log from before the feedback kind: the outcome inside a plan event
        (
            EventKind.PLAN,
            "system",
            {"outcome": {"sop": "tech-article@1", "success": True, "corrections": 0}},
            {},
        ),
        # memory/consolidation.py Consolidator._write()
        (
            EventKind.CONSOLIDATION,
            "system",
            {
                "through": "x",
                "messages": 12,
                "history_lines": 3,
                "facts": ["author/preferences: answers in bullet points"],
            },
            {},
        ),
        # knowledge/after_session.py SessionKnowledge.as_dict()
        (
            EventKind.KNOWLEDGE,
            "system",
            {
                "session": KEY,
                "journals": {"engineer": 2, "pm": 1},
                "by": ["engineer"],
                "gate": {"fired": False, "reasons": []},
                "fallbacks": [],
                "routed": [
                    {
                        "category": "task",
                        "text": "Check the gateway timeout",
                        "to": "tasks",
                        "outcome": "created",
                    }
                ],
            },
            {},
        ),
        # runtime/session_end.py end_session()
        (
            EventKind.SESSION_END,
            "system",
            {"reason": "closed", "first": "a", "last": "b", "events": 30},
            {},
        ),
    ]


def write_log(data: Path) -> list[Event]:
    """Write the log into the data folder ``data``; the events, in order."""
    events = []
    for n, (kind, author, content, meta) in enumerate(_events()):
        ts = f"2026-12-02T09:{15 + n // 60:02d}:{n % 60:02d}.000Z"
        id = f"{EPOCH}-entry" if n == 0 else f"{EPOCH}-e{n:03d}"
        meta = {**meta, "epoch": EPOCH} if n == 0 else meta
        events.append(Event(id, ts, KEY, kind, author, content, meta=meta))
    path = data / "sessions" / f"{KEY}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    return events
