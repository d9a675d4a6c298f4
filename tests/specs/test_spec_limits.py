"""Hostile YAML at the edge: alias bombs, deep nesting, control characters, huge files."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework import InputError
from framework.specs.scenario import load_scenario

BOMB = "\n".join(
    [f"a0: &a0 [{', '.join(['x'] * 9)}]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["participants: *a8", "id: s", "title: t", "announcement: hi"]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BOMB, "aliases expand"),
        ("a: " + "[" * 10_000 + "]" * 10_000, "nested too deeply"),
        ("id: s\x00\ntitle: t\n", "remove control characters"),
        ("id: s\x1b[31m\ntitle: t\n", "remove control characters"),
        ("id: s\ndescription: " + "x" * 1_100_000 + "\n", "capped at 1,000,000"),
    ],
    ids=["alias-bomb", "deep", "nul", "esc", "huge"],
)
def test_hostile_yaml_is_a_clear_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert expected in caught.value.render()
    assert caught.value.file == str(path)
