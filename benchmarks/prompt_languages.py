"""Which language the framework writes each sample's prompts in, and what the frame costs.

    .venv/bin/python benchmarks/prompt_languages.py

Runs each shipped sample room to its end offline (a scripted model that answers "Noted.",
so every turn's prompt is recorded exactly as a real model would get it) and prints, per
room: the employees' turn prompts, their mean size (characters and the framework's token
estimate), how many Han characters they hold (people's text included), and how many of the
framework's own headings (你是/角色/公告/参与者/本轮任务/第N步/工具 in Chinese, You are/
Announcement/Who is here/Your turn/SOP step/tools in English) each prompt carries. Then the
frame alone (the packaged employee_system.j2 around one short step) in both languages.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile
from pathlib import Path

from framework import EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.models.brief import find_brief
from framework.prompts.environment import PromptRenderer
from framework.runtime.prompt_budget import estimate_tokens
from framework.specs.employee import EmployeeCard
from framework.specs.model_spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
MARKERS = {
    "zh": ["你是", "角色", "## 公告", "## 参与者", "## 本轮任务", "SOP 第", "（工具："],
    "en": ["You are", "## Announcement", "## Who is here", "## Your turn", "SOP step", "(tools:"],
}
SAMPLES = [("escalation", "Looks good, continue."), ("tech-article", "方向没问题，继续。")]


async def turn_prompts(scenario: str, reply: str, data: Path) -> list[str]:
    model = ScriptedChatModel(replies=["Noted."] * 60)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        return model

    settings = Settings(data_dir=data, project_dir=ROOT, allow_network=False)
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("bench", scenario)
        events = [e async for e in room.start()]
        while events[-1].kind == EventKind.WAIT:
            author = events[-1].content["waiting_for"][0]
            events += [e async for e in room.post(reply, author=author)]
    return [str(c[0].content) for c in model.calls if find_brief(c).get("purpose") == "turn"]


def frame_tokens(language: str) -> int:
    card = EmployeeCard.model_validate(
        {"id": "a", "display_name": "A", "role": "r", "persona": "", "language": language}
    )
    context = {
        "card": card,
        "announcement": "",
        "participants": [card],
        "humans": ["h"],
        "step": {
            "n": 1,
            "do": "x",
            "tools": ["write_file"],
            "produces": ["x.md"],
            "fallback": None,
        },
        "why": "sop_step",
        "tools": ["write_file", "memory"],
        "memories": [],
        "history": "",
        "blocks": [],
    }
    return estimate_tokens(
        PromptRenderer().render("employee_system.j2", context, language=language)
    )


async def main() -> None:
    print("room          turns  mean chars  mean est. tokens  Han chars  zh headings  en headings")
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, reply in SAMPLES:
            prompts = await turn_prompts(scenario, reply, Path(tmp) / scenario)
            chars = statistics.mean(len(p) for p in prompts)
            tokens = statistics.mean(estimate_tokens(p) for p in prompts)
            han = sum(len(HAN.findall(p)) for p in prompts)
            found = {
                lang: statistics.mean(sum(m in p for m in marks) for p in prompts)
                for lang, marks in MARKERS.items()
            }
            print(
                f"{scenario:<13} {len(prompts):>5}  {chars:>10.0f}  {tokens:>16.0f}  {han:>9}"
                f"  {found['zh']:>11.1f}  {found['en']:>11.1f}"
            )
    print()
    print(f"the frame alone: en {frame_tokens('en')} est. tokens, zh {frame_tokens('zh')}")


if __name__ == "__main__":
    asyncio.run(main())
