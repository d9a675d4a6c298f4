"""Smoke test of the real-model tier: one chat completion through ChatOpenAI to a live server."""

from __future__ import annotations

import re

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from stub_openai import context_length_body

pytestmark = pytest.mark.llm

N = 8
N_CTX = 4096  # what tests/llm/serve.py starts the server with


def test_max_tokens_caps_the_completion(llm_url: str, llm_model: str) -> None:
    # langchain-openai sends max_tokens as `max_completion_tokens`; llama.cpp's server reads
    # `max_tokens`, so the cap goes both ways (extra_body lands in the JSON body as is).
    model = ChatOpenAI(
        model=llm_model,
        base_url=llm_url,
        api_key="k",
        max_retries=0,
        timeout=120,
        temperature=0,
        max_tokens=N,
        extra_body={"max_tokens": N},
    )
    answer = model.invoke(
        [SystemMessage("You are a storyteller."), HumanMessage("Tell a long story about llamas.")]
    )
    assert isinstance(answer.content, str)
    assert answer.content.strip()
    usage = answer.usage_metadata
    assert usage is not None
    assert 0 < usage["output_tokens"] <= N
    assert usage["input_tokens"] > 0


def test_a_prompt_over_n_ctx_is_the_openai_400(llm_url: str, llm_model: str) -> None:
    model = ChatOpenAI(model=llm_model, base_url=llm_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        model.invoke("word " * 5000, extra_body={"max_tokens": N})
    assert caught.value.status_code == 400
    assert caught.value.code == "context_length_exceeded"
    # the stub's n_ctx mode answers this same body (tests/stub_openai.py)
    body = caught.value.body
    assert isinstance(body, dict)
    match = re.search(r"\((\d+) in the messages", body["message"])
    assert match
    prompt_tokens = int(match.group(1))
    assert prompt_tokens >= N_CTX
    assert {"error": body} == context_length_body(N_CTX, prompt_tokens, N)
