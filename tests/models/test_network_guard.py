"""allow_network=False lets only servers on this machine through, by address, not by prefix."""

from __future__ import annotations

import pytest

from framework.errors import ModelError
from framework.models.factory import build_model
from framework.specs.model_spec import ModelSpec


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/v1", "http://localhost:8080/v1", "http://[::1]:8080/v1"]
)
def test_loopback_servers_are_allowed_offline(url: str) -> None:
    spec = ModelSpec(provider="openai", name="m", base_url=url)
    assert build_model(spec, allow_network=False) is not None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1.example.com/v1",
        "http://localhost@example.com/v1",
        "http://example.com/127.0.0.1/v1",
        None,
    ],
)
def test_anything_else_is_refused_offline(url: str | None) -> None:
    spec = ModelSpec(provider="openai", name="m", base_url=url)
    with pytest.raises(ModelError, match="needs the network"):
        build_model(spec, allow_network=False)


def test_an_imported_class_cannot_use_a_loopback_base_url_to_pass_offline() -> None:
    spec = ModelSpec.model_validate(
        {
            "provider": "import",
            "class_path": "langchain_openai.ChatOpenAI",
            "base_url": "http://127.0.0.1/v1",
            "options": {"base_url": "https://api.example.com/v1"},
        }
    )
    with pytest.raises(ModelError, match="needs the network"):
        build_model(spec, allow_network=False)


def test_openais_own_endpoint_needs_its_key_even_when_named_by_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = ModelSpec.model_validate("openai:gpt-4o-mini@https://api.openai.com/v1")
    with pytest.raises(ModelError, match="set the environment variable OPENAI_API_KEY"):
        build_model(spec, allow_network=True)


def test_secrets_in_a_base_url_never_reach_messages() -> None:
    from framework.models.profile import redact_url

    shown = redact_url("http://user:s3cret@127.0.0.1:9/v1?api_key=SEKRET&x=1")
    assert "s3cret" not in shown and "SEKRET" not in shown
    assert shown == "http://user:***@127.0.0.1:9/v1?api_key=***&x=***"
