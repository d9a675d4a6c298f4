"""Limits on fields: numeric ranges, text and id lengths, blank entries (issue 8, point 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import CardError, InputError, ScenarioError, SopCardError
from framework.names import is_name
from framework.specs import load_card, load_scenario, load_sop_card
from framework.specs.limits import MAX_ID_CHARS, MAX_TEXT_CHARS

BASE = """\
id: demo
title: Demo
participants: [pm]
announcement: hi
"""


def _scenario(tmp_path: Path, extra: str, base: str = BASE) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(base + extra, encoding="utf-8")
    return path


def _error(path: Path) -> InputError:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return caught.value


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("recent_turns", "1e23", "from 1 to 1,000"),  # YAML 1.1 reads 1e23 as text
        ("recent_turns", "1.0e+23", "from 1 to 1,000"),
        ("recent_turns", "100000000000000000000000", "from 1 to 1,000"),
        ("recent_turns", "true", "from 1 to 1,000"),
        ("max_turns", "0", "from 1 to 10,000"),
        ("max_turns", "10001", "from 1 to 10,000"),
        ("memory_window", "-3", "from 1 to 1,000"),
        ("tool_output_budget", "99999999999", "from 200 to 1,000,000"),
    ],
)
def test_every_setting_has_a_range_named_in_the_error(
    tmp_path: Path, field: str, value: str, needle: str
) -> None:
    err = _error(_scenario(tmp_path, f"settings:\n  {field}: {value}\n"))
    assert err.field == f"settings.{field}"
    assert err.line == 6
    assert needle in err.message + (err.fix or "")


def test_a_number_with_thousands_of_digits_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # Python refuses to read over 4,300 decimal digits as a number (a bare ValueError).
    for digits in ("9" * 5000, "0x" + "f" * 5000):
        err = _error(_scenario(tmp_path, f"settings:\n  recent_turns: {digits}\n"))
        assert err.line == 6 and "at most 100" in err.message


def test_model_windows_have_an_upper_bound(tmp_path: Path) -> None:
    model = "{provider: simulated, context_window: 1000000000000}"
    err = _error(_scenario(tmp_path, f"settings:\n  model: {model}\n"))
    assert err.field == "settings.model.context_window"
    assert "<= 100,000,000" in err.message


def test_announcement_text_is_capped(tmp_path: Path) -> None:
    text = "长" * (MAX_TEXT_CHARS + 1)
    base = BASE.replace("announcement: hi", f"announcement: {text}")
    err = _error(_scenario(tmp_path, "", base))
    assert (err.field, err.line) == ("announcement.text", 4)
    assert f"{MAX_TEXT_CHARS + 1:,} characters" in err.message and "20,000" in err.message
    assert text not in str(err)  # the error never echoes the text itself


def test_text_at_the_cap_is_accepted(tmp_path: Path) -> None:
    text = "长" * MAX_TEXT_CHARS
    scenario = load_scenario(_scenario(tmp_path, "", BASE.replace("hi", text)))
    assert len(scenario.announcement.text) == MAX_TEXT_CHARS


@pytest.mark.parametrize("words", ['[""]', '["/stop", "   "]', '["\\t"]'])
def test_blank_stop_words_are_errors(tmp_path: Path, words: str) -> None:
    err = _error(_scenario(tmp_path, f"settings:\n  stop_words: {words}\n"))
    assert err.field is not None and err.field.startswith("settings.stop_words[")
    assert "empty" in err.message and err.line == 6


def test_sop_reviewers_follow_the_name_rule(tmp_path: Path) -> None:
    err = _error(_scenario(tmp_path, "settings:\n  sop_reviewers: [alice, ../../etc]\n"))
    assert err.field == "settings.sop_reviewers[1]"


def test_humans_must_not_be_empty(tmp_path: Path) -> None:
    err = _error(_scenario(tmp_path, "humans: []\n"))
    assert (err.field, err.line) == ("humans", 5)
    assert "humans: [author]" in (err.fix or "")


def test_long_ids_are_refused_everywhere(tmp_path: Path) -> None:
    long_id = "a" * 10_000
    err = _error(_scenario(tmp_path, "", BASE.replace("id: demo", f"id: {long_id}")))
    assert (err.field, err.line) == ("id", 1)
    assert "10,000 characters" in err.message and f"at most {MAX_ID_CHARS}" in err.message
    assert len(str(err)) < 500

    card = tmp_path / "card.yaml"
    card.write_text(f"id: {long_id}\ndisplay_name: P\nrole: pm\npersona: x\n", encoding="utf-8")
    with pytest.raises(CardError, match="at most 64"):
        load_card(card)

    sop = tmp_path / "v1.md"
    sop.write_text(
        f"---\nid: {long_id}\nversion: 1\nscope: global\ngoal: g\n"
        "steps:\n  - {speaker: pm, do: a}\n---\n",
        encoding="utf-8",
    )
    with pytest.raises(SopCardError, match="at most 64"):
        load_sop_card(sop)


def test_a_bad_long_id_is_reported_short(tmp_path: Path) -> None:
    err = _error(_scenario(tmp_path, "", BASE.replace("id: demo", "id: Bad Id " + "X" * 50)))
    assert "not a valid id" in err.message
    assert len(str(err)) < 400


def test_the_longest_id_is_a_safe_path_name(tmp_path: Path) -> None:
    longest = "a" * MAX_ID_CHARS
    scenario = load_scenario(_scenario(tmp_path, "", BASE.replace("id: demo", f"id: {longest}")))
    assert is_name(scenario.id)


def test_sop_version_numbers_are_bounded(tmp_path: Path) -> None:
    sop = tmp_path / "v1.md"
    sop.write_text(
        "---\nid: x\nversion: 99999999999999999999\nscope: global\ngoal: g\n"
        "steps:\n  - {speaker: pm, do: a}\n---\n",
        encoding="utf-8",
    )
    with pytest.raises(SopCardError) as caught:
        load_sop_card(sop)
    assert caught.value.field == "version" and "1,000,000" in caught.value.message
