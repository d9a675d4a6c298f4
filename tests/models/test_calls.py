"""Model calls: role layout, retries with backoff, errors that name the endpoint."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from framework.models import ScriptedChatModel
from framework.models.brief import TurnBrief, attach_brief, find_brief
from framework.models.calls import CUE, ModelCallError, call_model, classify, layout
from framework.models.profile import ModelProfile


def profile(role: str = "system") -> ModelProfile:
    return ModelProfile(label="m", system_role=role, base_url="http://127.0.0.1:1/v1")  # type: ignore[arg-type]


def test_every_request_has_a_user_message_right_after_the_instructions() -> None:
    out = layout([SystemMessage(content="rules")], profile())
    assert [type(m) for m in out] == [SystemMessage, HumanMessage] and out[1].content == CUE


def test_fold_moves_instructions_and_brief_into_the_first_user_message() -> None:
    system = attach_brief(SystemMessage(content="rules"), TurnBrief(employee="pm"))
    messages = [
        system,
        HumanMessage(content="a: hi"),
        HumanMessage(content="b: yo"),
        AIMessage(content="ok"),
    ]
    out = layout(messages, profile("fold"))
    assert [type(m) for m in out] == [HumanMessage, AIMessage]
    assert str(out[0].content).startswith("rules") and "a: hi" in str(out[0].content)
    assert "b: yo" in str(out[0].content)  # consecutive user turns merged: roles alternate
    assert find_brief(out)["employee"] == "pm"


def test_both_keeps_the_system_message_and_repeats_it() -> None:
    out = layout([SystemMessage(content="rules"), HumanMessage(content="hi")], profile("both"))
    assert isinstance(out[0], SystemMessage) and "rules" in str(out[1].content)


async def test_transient_errors_back_off_then_succeed() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    model = ScriptedChatModel(replies=[TimeoutError("slow"), ConnectionError("reset"), "ok"])
    reply = await call_model(
        model, [HumanMessage(content="hi")], profile(), retries=2, backoff=0.5, sleep=sleep
    )
    assert reply.content == "ok" and waits == [0.5, 1.0]


async def test_a_permanent_error_is_not_retried_and_names_the_endpoint() -> None:
    model = ScriptedChatModel(replies=[ConnectionError("refused")])
    with pytest.raises(ModelCallError) as caught:
        await call_model(model, [HumanMessage(content="hi")], profile(), retries=0)
    assert caught.value.kind == "connection"
    assert "http://127.0.0.1:1/v1" in str(caught.value)


def test_context_overflow_is_recognised_in_the_wording_servers_use() -> None:
    for text in (
        "This model's maximum context length is 4096 tokens. However, you requested 4100",
        "Requested tokens (5000) exceed context window of 4096",
        "prompt is too long",
    ):
        assert classify(ValueError(text)) == "context_length"


async def test_a_permanent_error_is_raised_at_once() -> None:
    model = ScriptedChatModel(replies=[ValueError("model 'x' does not exist"), "never used"])
    with pytest.raises(ModelCallError) as caught:
        await call_model(model, [HumanMessage(content="hi")], profile(), retries=2, backoff=0)
    assert caught.value.kind == "other" and caught.value.attempts == 1
    assert model.replies == ["never used"]


def test_the_cap_goes_in_the_field_each_endpoint_reads() -> None:
    from framework.models.factory import cap_fields
    from framework.specs.model_spec import ModelSpec

    official = ModelSpec.model_validate("openai:gpt-4o-mini")
    assert cap_fields(official, 100) == {"max_tokens": 100}  # sent as max_completion_tokens
    local = ModelSpec.model_validate("openai:g@http://127.0.0.1:8080/v1")
    assert cap_fields(local, 100) == {"max_tokens": 100, "extra_body": {"max_tokens": 100}}
