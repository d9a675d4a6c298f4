"""The stub OpenAI-compatible server, driven the way the framework drives a model: ChatOpenAI."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from stub_openai import StubOpenAI


def chat(stub: StubOpenAI, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="m",
        base_url=stub.base_url,
        api_key="k",
        max_retries=0,
        **options,
    )


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def test_text_reply_and_usage(stub_openai: StubOpenAI) -> None:
    stub_openai.reply("hello there")
    answer = chat(stub_openai).invoke([SystemMessage("be brief"), HumanMessage("hi")])
    assert answer.content == "hello there"
    assert answer.usage_metadata is not None
    assert answer.usage_metadata["total_tokens"] > 0
    (request,) = stub_openai.completions
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    assert request.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]


def test_empty_queue_answers_the_default_text(stub_openai: StubOpenAI) -> None:
    assert chat(stub_openai).invoke("hi").content == "stub reply"
    assert stub_openai.pending == 0


def test_tool_call_round_trip(stub_openai: StubOpenAI) -> None:
    stub_openai.tool_call("lookup", {"query": "llamas"}).reply("llamas are found")
    model = chat(stub_openai).bind_tools([lookup])
    first = model.invoke([HumanMessage("find llamas")])
    assert isinstance(first, AIMessage)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("lookup", {"query": "llamas"})
    result = ToolMessage(lookup.invoke(call["args"]), tool_call_id=call["id"])
    second = model.invoke([HumanMessage("find llamas"), first, result])
    assert second.content == "llamas are found"
    tools_sent, followup = (r.body for r in stub_openai.completions)
    assert tools_sent["tools"][0]["function"]["name"] == "lookup"
    assert followup["messages"][1]["tool_calls"][0]["id"] == call["id"]
    # what llama-cpp-python's server refuses with a 500: an assistant turn with content null
    assert followup["messages"][1]["content"] is None
    assert followup["messages"][2] == {
        "role": "tool",
        "content": "found llamas",
        "tool_call_id": call["id"],
    }


CONTEXT_ERROR = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested "
        "4100 tokens (4000 in the messages, 100 in the completion).",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def test_a_scripted_400_is_a_bad_request_error(stub_openai: StubOpenAI) -> None:
    stub_openai.error(400, CONTEXT_ERROR)
    with pytest.raises(openai.BadRequestError) as caught:
        chat(stub_openai).invoke("hi")
    assert caught.value.status_code == 400
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length is 4096" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
        (429, openai.RateLimitError),
    ],
)
def test_scripted_http_errors(stub_openai: StubOpenAI, status: int, error: type) -> None:
    stub_openai.error(status, "busy").reply("after the error")
    model = chat(stub_openai)
    with pytest.raises(error) as caught:
        model.invoke("hi")
    assert caught.value.status_code == status
    assert model.invoke("hi").content == "after the error"


def test_dropped_connection_is_a_connection_error(stub_openai: StubOpenAI) -> None:
    stub_openai.drop().reply("back")
    model = chat(stub_openai)
    with pytest.raises(openai.APIConnectionError):
        model.invoke("hi")
    assert model.invoke("hi").content == "back"
    assert len(stub_openai.completions) == 2


def test_delay_holds_the_next_answer(stub_openai: StubOpenAI) -> None:
    stub_openai.delay(0.3).reply("late")
    started = time.monotonic()
    assert chat(stub_openai).invoke("hi").content == "late"
    assert time.monotonic() - started >= 0.3


def test_delay_past_the_client_timeout(stub_openai: StubOpenAI) -> None:
    stub_openai.delay(2.0)
    with pytest.raises(openai.APITimeoutError):
        chat(stub_openai, timeout=0.2).invoke("hi")


def test_max_token_fields_are_recorded(stub_openai: StubOpenAI) -> None:
    chat(stub_openai, max_tokens=7).invoke("a")
    chat(stub_openai, max_completion_tokens=9).invoke("b")
    chat(stub_openai, max_tokens=5, extra_body={"max_tokens": 5}).invoke("c")
    bodies = [r.body for r in stub_openai.completions]
    # langchain-openai sends max_tokens as max_completion_tokens; only extra_body sends max_tokens
    assert bodies[0].get("max_completion_tokens") == 7
    assert "max_tokens" not in bodies[0]
    assert bodies[1].get("max_completion_tokens") == 9
    assert (bodies[2]["max_completion_tokens"], bodies[2]["max_tokens"]) == (5, 5)


def test_n_ctx_mode_rejects_like_llama_cpp() -> None:
    with StubOpenAI(n_ctx=100) as stub:
        model = chat(stub, max_tokens=20)
        assert model.invoke("x" * 200).content == "stub reply"  # 50 + 20 <= 100
        with pytest.raises(openai.BadRequestError) as caught:
            model.invoke("x" * 400)  # 100 + 20 > 100
        assert caught.value.code == "context_length_exceeded"
        assert "maximum context length is 100 tokens" in str(caught.value)
        assert "you requested 120 tokens (100 in the messages, 20 in the completion)" in str(
            caught.value
        )
        assert stub.pending == 0


def test_n_ctx_mode_like_llama_cpp_python_caps_instead() -> None:
    with StubOpenAI(n_ctx=100, reserve_completion=False) as stub:
        assert chat(stub, max_tokens=90).invoke("x" * 396).content == "stub reply"  # 99 fits
        with pytest.raises(openai.BadRequestError) as caught:
            chat(stub, max_tokens=90).invoke("x" * 400)  # 100 >= n_ctx
        assert "you requested 100 tokens (100 in the messages, None in the completion)" in str(
            caught.value
        )  # langchain sent max_completion_tokens, which this server does not read


def test_streamed_requests_are_refused_and_recorded(stub_openai: StubOpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="stream=false only"):
        chat(stub_openai, streaming=True).invoke("hi")
    assert stub_openai.completions[0].body["stream"] is True


def test_models_listing(stub_openai: StubOpenAI) -> None:
    with urllib.request.urlopen(f"{stub_openai.base_url}/models", timeout=5) as response:
        listing = json.load(response)
    assert listing["data"][0]["id"] == "stub-model"
    assert stub_openai.requests[0].method == "GET"


async def test_async_client(stub_openai: StubOpenAI) -> None:
    stub_openai.reply("async hello")
    assert (await chat(stub_openai).ainvoke("hi")).content == "async hello"
