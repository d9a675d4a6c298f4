"""A run of tech-article whose SOP a model revises: pm thinks with a scripted model, the
author posts a correction and a score, and pm's model answers the reviser's prompt.

The reviser tests (the model's edits, its retries, the rules standing in) start here."""

from __future__ import annotations

from dataclasses import dataclass

from framework import Event, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.sop.model import SopVersion
from framework.specs.model_spec import ModelSpec

CORRECTION = "纠正: order 3 before 2 先定配图\n评分: 2/5"
"""What the author says after step 2: step 3 goes before step 2, and a bare score."""


@dataclass(frozen=True)
class RevisedRun:
    """What one run left: the draft tech-article@2, the correction's events, the whole
    history, pm's model (its calls are the prompts) and pm's model label."""

    draft: SopVersion
    posted: list[Event]
    history: list[Event]
    model: ScriptedChatModel
    label: str


async def run_with_reviser(
    settings: Settings, *reviser_replies: object, room: str = "rf-1"
) -> RevisedRun:
    """Run tech-article in ``room`` and post :data:`CORRECTION`; pm's model answers its two
    steps, then the reviser's prompts with ``reviser_replies`` (an exception: a failed call)."""
    model = ScriptedChatModel(replies=["提纲已写好。", "定稿完成。", *reviser_replies])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        opened = await staff.room(room, "tech-article")
        [_ async for _ in opened.start()]
        posted = [e async for e in opened.post(CORRECTION, author="author")]
        draft = await staff.sops.store.get("tech-article", 2)
        return RevisedRun(draft, posted, opened.history(), model, opened.model_labels["pm"])
