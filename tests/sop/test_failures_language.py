"""Why a run is not a success is written in the room's language: an English team reads
English reasons (the Chinese sample's are in tests/sop/test_evidence.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def talk_only(replies: dict[str, list[str]]) -> Any:
    """A model factory: each named employee answers in words only, never calling a tool."""
    models = {who: ScriptedChatModel(replies=list(r)) for who, r in replies.items()}

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return models.get(who)

    return factory


async def test_an_english_room_says_in_english_what_its_run_lacks(settings: Settings) -> None:
    factory = talk_only(
        {
            # Spare answers: the model reviser asks the room's first employee after the run.
            "triage": ["Acme's checkout returns 502 since 09:00, P1.", "{}", "{}", "{}"],
            "oncall": ["Likely the gateway's upstream timeout.", "The rollback is low risk."],
            "lead": ["Acme's one-hour promise holds.", "Reply drafted for Acme."],
        }
    )
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("esc-1", "escalation")
        await drain(
            room.start(message="Ticket #4411: checkout API returns HTTP 502.", author="maria")
        )
        events = await drain(room.post("Looks good, continue.", author="maria"))
    feedback = next(e for e in events if e.kind == EventKind.FEEDBACK)
    assert feedback.content["success"] is False
    assert feedback.content["failures"] == [
        "step 1 (triage) did not produce triage.md (triage made no tool call)",
        "step 2 (oncall) did not produce diagnosis.md (oncall made no tool call)",
        "step 4 (lead) did not produce reply.md (lead made no tool call)",
    ]
