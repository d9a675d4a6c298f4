"""Knowledge extraction asks in the language of what it reads: an English session gets the
English prompt (a weak model answers in the language of its instructions), a Chinese one the
Chinese prompt, and a Chinese name in an English session does not change that."""

from __future__ import annotations

import json
import re

import pytest

from framework.knowledge.extractors import model_extractor
from framework.knowledge.gate import ExtractionInput, extract
from framework.models import ScriptedChatModel
from framework.models.profile import ModelProfile
from framework.prompts.environment import PromptRenderer

PROFILE = ModelProfile(label="scripted", structured="prompt")
HAN = re.compile(r"[\u3400-\u9fff]")
ENGLISH = (
    "maria: Ticket #4411 from Acme Corp, checkout returns HTTP 502 since 09:10.\n"
    "oncall: The cause is the v2 gateway config; we rolled it back. 王伟 confirmed the fix.\n"
    "lead: Decision: we send Acme the incident report by Friday.\n"
)
CHINESE = "作者：这篇文章下周一发布。\n产品经理：决定先写提纲，再由研发写正文初稿。\n"
ANSWER = {"items": [{"category": "decision", "text": "Send Acme the report", "topic": "acme"}]}


@pytest.mark.parametrize(("text", "english"), [(ENGLISH, True), (CHINESE, False)])
async def test_the_prompt_is_in_the_language_of_the_input(text: str, english: bool) -> None:
    model = ScriptedChatModel(replies=[json.dumps(ANSWER)] * 2)
    extractor = model_extractor(model, PromptRenderer(), PROFILE)
    await extract(ExtractionInput("lead", "room:acme", text), extractor, gate=False)
    prompt = str(model.calls[0][0].content)
    if english:
        assert prompt.startswith("You read lead's working journal") and not HAN.search(prompt)
    else:
        assert prompt.startswith("你阅读 lead 的工作日志")
