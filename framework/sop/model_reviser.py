"""Revisers: who turns a version's outcomes into edit operations.

Two implementations behind one signature: the rule-based reviser (structured corrections,
used with the offline simulator) and a chat model prompted with ``revise_sop.j2``. Both
produce :class:`EditOp` s that go through the same ``apply_edits`` path; a model answer that
is not usable falls back to the rules, so feedback never stops on a bad reply.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from framework.prompts.environment import PromptRenderer
from framework.sop.edits import EditError, EditOp, apply_edits, render_step
from framework.sop.model import Outcome, SopVersion, Step
from framework.sop.reviser import propose_edits

Reviser = Callable[[SopVersion, Sequence[Outcome]], Awaitable[list[EditOp]]]


async def rule_reviser(current: SopVersion, outcomes: Sequence[Outcome]) -> list[EditOp]:
    """The rule-based reviser (see :func:`framework.sop.reviser.propose_edits`)."""
    return propose_edits(current, outcomes)


def model_reviser(model: BaseChatModel, renderer: PromptRenderer) -> Reviser:
    """A reviser that asks ``model`` for edits as JSON (falls back to the rules)."""

    async def revise(current: SopVersion, outcomes: Sequence[Outcome]) -> list[EditOp]:
        runs = [o for o in outcomes if o.sop_ref == current.ref]
        context = {
            "ref": current.ref,
            "goal": current.goal,
            "steps": [render_step(n, s) for n, s in enumerate(current.steps, start=1)],
            "runs": [
                {
                    "success": o.success,
                    "score": o.score,
                    "corrections": [f"{c.kind} step={c.step}: {c.detail}" for c in o.corrections],
                    "off_sop_turns": o.off_sop_turns,
                }
                for o in runs
            ],
        }
        prompt = renderer.render("revise_sop.j2", context)
        try:
            reply = await model.ainvoke(
                [SystemMessage(content=prompt), HumanMessage(content="Propose the edits as JSON.")]
            )
            ops = parse_edits(str(reply.content), current.steps)
            apply_edits(current.steps, ops)  # reject a proposal that does not apply
            return ops
        except Exception:  # an unusable model answer must not stop the loop
            return propose_edits(current, outcomes)

    return revise


def parse_edits(text: str, steps: tuple[Step, ...]) -> list[EditOp]:
    """Edit ops from a model's JSON (1-based step numbers, as the prompt shows them)."""
    start, end = text.find("{"), text.rfind("}")
    data: dict[str, Any] = json.loads(text[start : end + 1])
    ops: list[EditOp] = []
    for raw in data.get("edits", []):
        kind, reason = str(raw["op"]), str(raw.get("reason", ""))
        if kind == "move":
            ops.append(EditOp("move", int(raw["step"]) - 1, to=int(raw["to"]) - 1, reason=reason))
        elif kind == "remove":
            ops.append(EditOp("remove", int(raw["step"]) - 1, reason=reason))
        elif kind == "add":
            before = raw.get("before")
            index = int(before) - 1 if before else len(steps)
            step = Step((str(raw["speaker"]),), str(raw["do"]))
            ops.append(EditOp("add", index, step=step, reason=reason))
        elif kind == "edit":
            old = steps[int(raw["step"]) - 1]
            new = Step(
                old.speakers,
                str(raw["do"]),
                old.tools,
                old.fallback,
                old.waits_for_input,
                old.parallel,
            )
            ops.append(EditOp("edit", int(raw["step"]) - 1, step=new, reason=reason))
        else:
            raise EditError(f"unknown edit op {kind!r}")
    return ops
