"""``id@version`` parsed in one place: what is accepted, and how bad text is refused."""

from __future__ import annotations

import pytest

from framework.errors import InputError
from framework.sop.ref import SopRef


def test_parse_and_str_round_trip() -> None:
    assert SopRef.parse("tech-article@3") == SopRef("tech-article", 3)
    assert SopRef.parse("tech-article") == SopRef("tech-article", None)
    assert str(SopRef("tech-article", 3)) == "tech-article@3"
    assert str(SopRef("tech-article")) == "tech-article"
    assert SopRef.id_of("tech-article@x") == "tech-article" == SopRef.id_of("tech-article")
    assert len({SopRef("a", 1), SopRef.parse("a@1")}) == 1  # frozen, hashable


@pytest.mark.parametrize(
    ("text", "require", "message"),
    [
        ("tech-article@x", False, "'x' in 'tech-article@x' is not a version number"),
        ("tech-article@", False, "'tech-article@' names no version"),
        ("tech-article", True, "'tech-article' names no version"),
        ("@3", False, "'@3' names no SOP"),
        ("tech-article@٣", False, "is not a version number"),  # a digit, but not 0-9
        ("tech-article@0", False, "out of range"),
        ("tech-article@99999999999999999999", False, "out of range"),  # beyond SQLite
    ],
)
def test_malformed_refs_name_the_field_and_the_fix(text: str, require: bool, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        SopRef.parse(text, field="version", require_version=require)
    assert caught.value.field == "version"
    assert caught.value.fix is not None and caught.value.fix.startswith("write ID@VERSION")
