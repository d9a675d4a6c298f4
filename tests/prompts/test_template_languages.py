"""Every packaged prompt template, in both languages, with the contexts the framework renders it
with: an English prompt holds no Han text but what people wrote, and a Chinese one is Chinese.

The contexts are those of the call sites (the employee's turn, knowledge extraction, the SOP
reviser, the remark reader, consolidation), with each optional part both present and absent.
People's text in them (a persona, a remark, a step's wording) is partly Chinese on purpose: it
is taken out of the rendered prompt before the check, so what remains is the framework's own.
A template added to the package without a context here fails too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from framework.knowledge.gate import Rescan
from framework.knowledge.items import ExtractionAnswer, Item, ItemAnswer
from framework.models.structured import answer_format
from framework.prompts.environment import PACKAGED, PromptRenderer
from framework.sop.revisers import EXAMPLE, EditsAnswer
from framework.specs.employee import EmployeeCard

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")

TRIAGE = EmployeeCard.model_validate(
    {
        "id": "triage",
        "display_name": "Tess (triage)",
        "role": "triage",
        "persona": "You read each ticket first and say how bad it is. 客户常用中文写信。",
        "tools": ["read_file", "write_file"],
        "language": "en",
    }
)
ENGINEER = EmployeeCard.model_validate(
    {
        "id": "engineer",
        "display_name": "Eli",
        "role": "engineer",
        "persona": "You find the cause of a failure and say how to fix it.",
    }
)
STEP = {
    "n": 2,
    "do": "Diagnose the 502 and write diagnosis.md（诊断）",
    "tools": ["read_file", "write_file"],
    "produces": ["diagnosis.md"],
    "fallback": "say what is missing and ask the support lead",
}
MEMORY = {"user": "maria", "text": "[identity]\nName: Maria Chen\n[preferences]\n偏好语言: English"}
HISTORY = "2026-12-02 maria asked for a status update; 王伟 confirmed the fix"
BLOCK = {"title": "Knowledge", "text": "Acme Corp runs checkout v2 (客户说明)."}


def employee_contexts() -> Iterator[dict[str, Any]]:
    base = {
        "card": TRIAGE,
        "participants": [TRIAGE, ENGINEER],
        "humans": ["maria", "customer_rep"],
        "tools": ["read_file", "write_file", "memory"],
    }
    yield {
        **base,
        "announcement": "Escalation room for Acme Corp. 客户：Acme。",
        "step": STEP,
        "why": "sop_step",
        "memories": [MEMORY],
        "history": HISTORY,
        "blocks": [BLOCK],
    }
    for why in ("mention", "selector", "direct"):
        yield {
            **base,
            "announcement": "",
            "step": None,
            "why": why,
            "memories": [],
            "history": "",
            "blocks": [],
            "tools": [],
        }


def extraction_contexts() -> Iterator[dict[str, Any]]:
    example = ItemAnswer(category="decision", text="<what was decided>", topic="<topic>")
    fmt = answer_format(ExtractionAnswer, [example])
    found = [Item("task", "Roll back checkout v2 (回滚)")]
    yield {"employee": "triage", "rescan": None, "too_many": False, "answer_format": fmt}
    for too_many in (False, True):
        rescan = Rescan(reasons=["no decision in a retrospective"], found=found)
        yield {"employee": "triage", "rescan": rescan, "too_many": too_many, "answer_format": fmt}


def revision_contexts() -> Iterator[dict[str, Any]]:
    yield {
        "ref": "escalation@1",
        "goal": "A customer's ticket from triage to an answer",
        "steps": ["1. triage: Read the ticket", "2. engineer: 诊断 [tools: read_file]"],
        "runs": [
            {
                "success": False,
                "score": 0.4,
                "off_sop_turns": 1,
                "corrections": ["order step=3: 先回复客户"],
            },
            {"success": True, "score": None, "off_sop_turns": 0, "corrections": []},
        ],
        "answer_format": answer_format(EditsAnswer, [EXAMPLE]),
    }


def remark_contexts() -> Iterator[dict[str, Any]]:
    yield {
        "ref": "escalation@1",
        "steps": ["1. triage: Read the ticket", "2. engineer: 诊断"],
        "employees": ["triage", "engineer", "lead"],
        "person": "maria",
        "remark": "the reply should come before the diagnosis（先回复）",
        "answer_format": "Reply with one JSON object only.",
    }


def consolidation_contexts() -> Iterator[dict[str, Any]]:
    base = {
        "day": "2026-12-02",
        "humans": ["maria", "王伟"],
        "answer_format": "Reply with one JSON object only.",
    }
    yield {**base, "entries": "", "unshown": 0}
    # The people's current entries, numbered, so a fact may say which one it replaces.
    entries = "1. maria / facts: Design review on Friday\n2. 王伟 / preferences: 偏好语言: 中文"
    yield {**base, "entries": entries, "unshown": 3}


CONTEXTS = {
    "employee_system.j2": employee_contexts,
    "extract_knowledge.j2": extraction_contexts,
    "revise_sop.j2": revision_contexts,
    "read_remark.j2": remark_contexts,
    "consolidate.j2": consolidation_contexts,
}


def people_text(value: Any) -> Iterator[str]:
    """Every string people wrote in a context value (cards, steps, lists, answers)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from people_text(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from people_text(item)
    elif isinstance(value, EmployeeCard):
        yield from (value.display_name, value.role, value.persona)
    elif isinstance(value, Rescan):
        yield from people_text(value.reasons)
        yield from (item.text for item in value.found)


def framework_text(prompt: str, context: dict[str, Any]) -> str:
    """``prompt`` without what people wrote (longest first, so no part of one is left)."""
    for text in sorted(set(people_text(context)), key=len, reverse=True):
        if text:
            prompt = prompt.replace(text, " ")
    return prompt


PENDING: dict[tuple[str, str], str] = {}
"""Templates whose other language is written on another branch of this issue: expected to
fail until it lands, and strict, so the merge that fixes one must take it off this list."""


@dataclass(frozen=True)
class Case:
    name: str
    index: int
    context: dict[str, Any]


def cases(language: str) -> list[Any]:
    out = []
    for name, make in CONTEXTS.items():
        pending = PENDING.get((language, name))
        marks = [pytest.mark.xfail(strict=True, reason=pending)] if pending else []
        for i, context in enumerate(make()):
            out.append(pytest.param(Case(name, i, context), id=f"{name}-{i}", marks=marks))
    return out


def test_every_packaged_template_has_a_context_here() -> None:
    packaged = {p.name for p in (PACKAGED / "en").glob("*.j2")}
    assert packaged == set(CONTEXTS), "give the new template its contexts in CONTEXTS"


@pytest.mark.parametrize("case", cases("en"))
def test_an_english_prompt_has_no_chinese_of_its_own(case: Case) -> None:
    prompt = PromptRenderer().render(case.name, case.context, language="en")
    own = framework_text(prompt, case.context)
    found = HAN.findall(own)
    assert not found, f"en/{case.name} writes Chinese itself: {''.join(found)!r} in\n{own}"
    assert re.search(r"[A-Za-z]{3,}", own)


@pytest.mark.parametrize("case", cases("zh"))
def test_a_chinese_prompt_is_written_in_chinese(case: Case) -> None:
    prompt = PromptRenderer().render(case.name, case.context, language="zh")
    own = framework_text(prompt, case.context)
    # The JSON schema and example the answer must follow are English by nature; the
    # instructions around them are Chinese.
    instructions = own.split("Reply with one JSON object only")[0]
    assert len(HAN.findall(instructions)) >= 20, f"zh/{case.name} is not Chinese:\n{own}"


def test_the_english_turn_prompt_carries_every_part_it_is_given() -> None:
    context = next(employee_contexts())
    prompt = PromptRenderer().render("employee_system.j2", context, language="en")
    for part in ("Tess (triage)", "@engineer", "maria (a person)", "Name: Maria Chen", HISTORY):
        assert part in prompt
    assert "SOP step 2: Diagnose the 502" in prompt
    assert "Write these files to the workspace: diagnosis.md" in prompt
    assert "If that cannot be done: say what is missing" in prompt
