"""A model reads one remark against a run's steps (``read_remark.j2``), as structured JSON.

Used by the room's hook (``sop/run_remarks.py``) and by ``benchmarks/remark_reader.py
--model`` (how often a real model turns an ordinary message into a correction).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from framework.language import is_english, snippet
from framework.models.profile import ModelProfile
from framework.models.structured import StructuredAnswer, answer_format, ask_structured
from framework.prompts.environment import PromptRenderer
from framework.sop.edits import render_step
from framework.sop.model import Step
from framework.sop.remarks import (
    EXAMPLE,
    REMARK_CHARS,
    RemarkAnswer,
    answer_problem,
    lenient_answer,
)

ASK = "Answer with the JSON object only."
"""The user turn after the prompt (the prompt, in the remark's language, says the rest)."""


async def read_with_model(
    model: BaseChatModel,
    profile: ModelProfile,
    renderer: PromptRenderer,
    *,
    ref: str,
    steps: Sequence[Step],
    employees: Sequence[str],
    person: str,
    text: str,
    retries: int = 2,
    backoff: float = 1.0,
) -> StructuredAnswer[RemarkAnswer]:
    """What ``model`` reads in ``person``'s ``text`` about the SOP ``ref``'s ``steps``.

    The prompt is in the remark's language; an answer that does not fit the steps
    (:func:`~framework.sop.remarks.answer_problem`) is retried once with the problem shown.
    """
    prompt = renderer.render(
        "read_remark.j2",
        {
            "ref": ref,
            "steps": [render_step(n, s) for n, s in enumerate(steps, start=1)],
            "employees": list(employees),
            "person": person,
            "remark": snippet(text, REMARK_CHARS),
            "answer_format": answer_format(RemarkAnswer, [EXAMPLE]),
        },
        language="en" if is_english(text) else "zh",
    )
    return await ask_structured(
        model,
        [SystemMessage(content=prompt), HumanMessage(content=ASK)],
        RemarkAnswer,
        profile,
        examples=[EXAMPLE],
        check=lambda a: answer_problem(a, steps, employees),
        lenient=lenient_answer,
        retries=retries,
        backoff=backoff,
    )
