"""ask_structured: schema in the prompt, JSON mode by profile, one retry, visible fallbacks."""

from __future__ import annotations

import socket

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from stub_openai import StubOpenAI

from framework.models import ScriptedChatModel
from framework.models.profile import ModelProfile
from framework.models.structured import ask_structured, extract_json, response_format


class Pick(BaseModel):
    speaker: str
    score: int = 0


PROMPT = ModelProfile(label="test", structured="prompt")
ASK = [SystemMessage(content="Pick who answers."), HumanMessage(content="hello")]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens once the socket is closed


async def test_a_valid_answer_is_used_and_the_prompt_carries_schema_and_example() -> None:
    model = ScriptedChatModel(replies=['{"speaker": "pm", "score": 3}'])
    answer = await ask_structured(model, ASK, Pick, PROMPT, examples=[Pick(speaker="designer")])
    assert answer.value == Pick(speaker="pm", score=3)
    assert (answer.fallback_reason, answer.attempts, answer.call_failed) == (None, 1, False)
    sent = "\n".join(str(m.content) for m in model.calls[0])
    assert '"required":["speaker"]' in sent and '{"speaker":"designer","score":0}' in sent


@pytest.mark.parametrize(
    "text",
    [
        'Sure!\n```json\n{"speaker": "pm"}\n```\nHope this helps.',
        'The answer is {"speaker": "pm"} as asked {not json}',
        '  {"speaker": "pm"}  ',
    ],
)
def test_json_is_found_in_fences_and_around_text(text: str) -> None:
    assert extract_json(text) == {"speaker": "pm"}


async def test_a_bad_answer_is_retried_once_with_the_validation_error() -> None:
    model = ScriptedChatModel(replies=['{"speaker": 42}', '{"speaker": "engineer"}'])
    answer = await ask_structured(model, ASK, Pick, PROMPT)
    assert answer.value == Pick(speaker="engineer") and answer.attempts == 2
    retry = model.calls[1]
    assert isinstance(retry[-2], AIMessage) and retry[-2].content == '{"speaker": 42}'
    assert isinstance(retry[-1], HumanMessage)
    assert "speaker: Input should be a valid string" in str(retry[-1].content)


async def test_two_unusable_answers_give_a_short_readable_reason() -> None:
    html = "<html><head><title>llama.cpp</title></head><body>" + "x" * 500 + "</body></html>"
    model = ScriptedChatModel(replies=[html, "Вот краткое содержание разговора."])
    answer = await ask_structured(model, ASK, Pick, PROMPT)
    assert answer.value is None and answer.attempts == 2 and answer.call_failed is False
    assert (
        answer.fallback_reason
        == "model answer unusable: not JSON ('Вот краткое содержание разговора.')"
    )
    assert "not JSON ('<html><head><title>llama.cpp</title></h…')" in str(
        model.calls[1][-1].content
    )
    assert len(str(model.calls[1][-2].content)) <= 600  # the echoed answer is cut


async def test_a_failed_check_counts_as_unusable_and_is_shown_to_the_model() -> None:
    model = ScriptedChatModel(replies=['{"speaker": "ceo"}', '{"speaker": "ceo"}'])

    def check(pick: Pick) -> str | None:
        return (
            None if pick.speaker in ("pm", "engineer") else f"{pick.speaker!r} is not a candidate"
        )

    answer = await ask_structured(model, ASK, Pick, PROMPT, check=check)
    assert answer.fallback_reason == "model answer unusable: 'ceo' is not a candidate"
    assert "'ceo' is not a candidate" in str(model.calls[1][-1].content)


async def test_a_lenient_reader_takes_a_bare_answer_without_a_retry() -> None:
    model = ScriptedChatModel(replies=["engineer"])

    def lenient(text: str) -> Pick | None:
        return Pick(speaker=text.strip()) if text.strip() in ("pm", "engineer") else None

    answer = await ask_structured(model, ASK, Pick, PROMPT, lenient=lenient)
    assert answer.value == Pick(speaker="engineer") and answer.attempts == 1


async def test_a_call_failure_is_not_retried_as_a_bad_answer_and_names_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = ChatOpenAI(model="m", base_url=url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    profile = ModelProfile(label="openai:m", base_url=url, structured="json_object")
    answer = await ask_structured(model, ASK, Pick, profile, retries=0)
    assert answer.value is None and answer.call_failed is True and answer.attempts == 1
    assert answer.fallback_reason is not None
    assert answer.fallback_reason.startswith(f"model call failed: cannot reach {url}")


def test_only_the_prompt_mode_binds_no_response_format() -> None:
    assert response_format(Pick, PROMPT) is None
    bound = response_format(Pick, ModelProfile(label="x", structured="json_object"))
    assert bound is not None and "title" not in bound["schema"]  # titles cost tokens


@pytest.mark.parametrize("mode", ["json_object", "json_schema", "prompt"])
async def test_the_request_carries_response_format_by_mode(
    stub_openai: StubOpenAI, mode: str
) -> None:
    stub_openai.reply("<p>not json</p>").reply('{"speaker": "pm"}')
    model = ChatOpenAI(
        model="stub-model", base_url=stub_openai.base_url, api_key="k", max_retries=0
    )  # type: ignore[arg-type]
    profile = ModelProfile(label="stub", base_url=stub_openai.base_url, structured=mode)  # type: ignore[arg-type]
    answer = await ask_structured(model, ASK, Pick, profile, examples=[Pick(speaker="pm")])
    assert answer.value == Pick(speaker="pm") and answer.attempts == 2
    first, retry = stub_openai.completions
    schema = {
        "properties": {"speaker": {"type": "string"}, "score": {"default": 0, "type": "integer"}},
        "required": ["speaker"],
        "type": "object",
    }
    expected = {
        "json_object": {"type": "json_object", "schema": schema},
        "json_schema": {
            "type": "json_schema",
            "json_schema": {"name": "Pick", "schema": schema, "strict": False},
        },
        "prompt": None,
    }[mode]
    assert first.body.get("response_format") == expected
    assert retry.body.get("response_format") == expected
    assert '"required":["speaker"]' in str(first.messages)  # the prompt always has the schema
    assert "not JSON ('<p>not json</p>')" in str(retry.messages[-1]["content"])


async def test_an_answer_cut_off_at_the_cap_is_retried(stub_openai: StubOpenAI) -> None:
    stub_openai.reply('{"speaker": "p', finish_reason="length").reply('{"speaker": "pm"}')
    model = ChatOpenAI(
        model="stub-model", base_url=stub_openai.base_url, api_key="k", max_retries=0
    )  # type: ignore[arg-type]
    profile = ModelProfile(label="stub", structured="json_object", max_output_tokens=64)
    answer = await ask_structured(model, ASK, Pick, profile)
    assert answer.value == Pick(speaker="pm") and answer.attempts == 2
    assert "cut off at the output cap (64 tokens)" in str(stub_openai.completions[1].messages[-1])
