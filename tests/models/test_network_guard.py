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
