"""The real-model tier: tests marked ``llm`` run only against a live OpenAI-compatible server.

``make test-llm`` starts llama.cpp's server on 127.0.0.1 and sets STAFFROOM_TEST_LLM_URL (and
STAFFROOM_TEST_LLM_MODEL); without the URL every ``llm`` test is skipped, so the default suite
never needs a model or the network.
"""

from __future__ import annotations

import os

import pytest

URL_ENV = "STAFFROOM_TEST_LLM_URL"
MODEL_ENV = "STAFFROOM_TEST_LLM_MODEL"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(URL_ENV):
        return
    skip = pytest.mark.skip(reason=f"real-model test: run `make test-llm` (or set {URL_ENV})")
    for item in items:
        if item.get_closest_marker("llm"):
            item.add_marker(skip)


@pytest.fixture
def llm_url() -> str:
    return os.environ[URL_ENV]


@pytest.fixture
def llm_model() -> str:
    return os.environ.get(MODEL_ENV, "local")
