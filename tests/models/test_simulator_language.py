"""The offline simulator (a deterministic test double) answers in the room's language, also
when a memory write it asked for was refused."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from framework.models.brief import TurnBrief, attach_brief
from framework.models.simulator import SimulatedChatModel

HAN = re.compile(r"[\u3400-\u9fff]")


def _after_refused_memory(language: str) -> str:
    brief: TurnBrief = {"employee": "sam", "display_name": "Sam", "language": language}
    messages = [
        attach_brief(SystemMessage(content="prompt"), brief),
        AIMessage(content="", tool_calls=[{"name": "memory", "args": {}, "id": "c1"}]),
        ToolMessage(content="refused: over the cap", tool_call_id="c1", status="error"),
    ]
    return str(SimulatedChatModel().reply(messages).content)


@pytest.mark.parametrize(("language", "han"), [("en", False), ("zh", True)])
def test_a_refused_memory_write_is_reported_in_the_rooms_language(language: str, han: bool) -> None:
    said = _after_refused_memory(language)
    assert "over the cap" in said
    assert bool(HAN.search(said)) is han, said
