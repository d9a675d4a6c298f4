"""Selectors pick who answers when neither the SOP nor an @mention decides.

A selector can never loop forever or pick nobody: a model selector is asked for
``{"speaker": "<id>"}`` (the ids as the schema's enum; a bare id is read leniently), an
unusable answer is retried once with the problem shown, and if it still names nobody, or the
model fails, round robin answers and the reason is returned for a ``fallback`` event.
"""

from __future__ import annotations

import re

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from framework.models.brief import TurnBrief, attach_brief
from framework.models.profile import ModelProfile
from framework.models.structured import answer_format, ask_structured
from framework.runtime.deps import RoomDeps
from framework.runtime.prompt_budget import cut_text
from framework.runtime.routing import pick_from_reply, round_robin


class SpeakerChoice(BaseModel):
    """The JSON a selector model answers with."""

    speaker: str


def speaker_schema(participants: list[str]) -> type[SpeakerChoice]:
    """:class:`SpeakerChoice` whose schema lists the ids (a grammar can then only pick one)."""
    return create_model(
        "SpeakerChoice",
        __base__=SpeakerChoice,
        speaker=(str, Field(json_schema_extra={"enum": list(participants)})),
    )


async def select_speaker(
    deps: RoomDeps, *, last_speaker: str | None, last_text: str
) -> tuple[str, str | None]:
    """``(employee id, fallback reason)``: the reason is set when round robin stood in."""
    participants = deps.plan.participants
    fallback = round_robin(participants, last_speaker)
    model = deps.models.selector
    if deps.plan.settings.selector != "model" or model is None or len(participants) == 1:
        return fallback, None
    cards = deps.plan.employees
    brief = TurnBrief(
        purpose="select",
        candidates=[
            {"id": p, "role": cards[p].role, "name": cards[p].display_name} for p in participants
        ],
    )
    schema = speaker_schema(participants)
    example = schema(speaker=participants[0])
    roster = "\n".join(f"- {p}: {cards[p].display_name}, {cards[p].role}" for p in participants)
    system = SystemMessage(
        content=f"Pick who should answer the last message. Candidates:\n{roster}\n\n"
        + answer_format(schema, [example])
    )

    def check(choice: SpeakerChoice) -> str | None:
        if choice.speaker in participants:
            return None
        return f"speaker {choice.speaker!r} is not one of: {', '.join(participants)}"

    def lenient(text: str) -> SpeakerChoice | None:
        picked = pick_from_reply(text, participants)
        # A whole word only: "pm" inside "development" names nobody.
        if picked is None or not re.search(rf"(?<![\w-]){re.escape(picked)}(?![\w-])", text, re.A):
            return None
        return schema(speaker=picked)

    profile = deps.models.profiles.get("selector") or ModelProfile(label="selector")
    # The message decides who answers; its head and tail are enough, and a long one must
    # not overflow a small selector model's window.
    said = cut_text(last_text, profile.input_budget // 2, "cut for the selector")
    answer = await ask_structured(
        model,
        [attach_brief(system, brief), HumanMessage(content=said)],
        schema,
        profile,
        examples=[example],
        check=check,
        lenient=lenient,
        retries=deps.settings.model_retries,
        backoff=deps.settings.model_backoff,
    )
    if answer.value is None:
        return fallback, answer.fallback_reason or "the selector named nobody"
    return answer.value.speaker, None
