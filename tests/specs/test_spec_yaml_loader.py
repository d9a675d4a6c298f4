"""YAML with line numbers, and pydantic errors turned into file:line field: message + fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from framework.errors import CardError, InputError, ScenarioError
from framework.specs import did_you_mean, load_yaml_file, validate
from framework.specs.catalog import Catalog
from framework.specs.yaml_loader import field_name, load_yaml_text, nearest_line


class Inner(BaseModel):
    n: int = Field(ge=1, examples=[3])


class Doc(BaseModel):
    title: str = Field(examples=["hello"])
    items: list[str] = Field(default_factory=list, examples=[["a", "b"]])
    inner: Inner | None = None
    mode: str = "x"


def test_line_map_has_every_key_and_item(tmp_path: Path) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(
        "# comment\ntitle: t\nitems:\n  - a\n  - b\ninner:\n  n: 2\nflow: [x, {k: v}]\n",
        encoding="utf-8",
    )
    data, lines = load_yaml_file(path)
    assert data["items"] == ["a", "b"]
    assert lines[("title",)] == 2
    assert lines[("items", 1)] == 5
    assert lines[("inner", "n")] == 7
    assert lines[("flow", 1, "k")] == 8
    assert lines[()] == 2


def test_first_line_offsets_every_line() -> None:
    _, lines = load_yaml_text("a: 1\nb:\n  - x\n", file="f.md", first_line=2)
    assert lines[("a",)] == 2
    assert lines[("b", 0)] == 4


def test_syntax_error_uses_the_callers_class_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: x\nrole: [a, b\npersona: y\n", encoding="utf-8")
    with pytest.raises(CardError) as caught:
        load_yaml_file(path, error_cls=CardError)
    assert caught.value.line == 2
    assert caught.value.file == str(path)
    assert caught.value.fix


def test_tab_indentation_gets_a_specific_fix(tmp_path: Path) -> None:
    path = tmp_path / "tabs.yaml"
    path.write_text("a:\n\tb: 1\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_yaml_file(path)
    assert caught.value.line == 2
    assert "tab" in (caught.value.fix or "")


def test_duplicate_keys_are_an_error_not_a_silent_overwrite() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_yaml_text("title: a\nitems: []\ntitle: b\n", file="s.yaml", error_cls=ScenarioError)
    assert caught.value.line == 3
    assert "line 1" in caught.value.message


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(CardError, match="not found"):
        load_yaml_file(tmp_path / "nope.yaml", error_cls=CardError)


def _validate(text: str) -> Doc:
    data, lines = load_yaml_text(text, file="doc.yaml")
    return validate(Doc, data, file="doc.yaml", lines=lines, error_cls=ScenarioError)


def test_missing_field_points_at_the_parent_and_quotes_an_example() -> None:
    with pytest.raises(ScenarioError) as caught:
        _validate("\nitems: [a]\n")
    err = caught.value
    assert (err.field, err.line) == ("title", 2)
    assert err.message == "missing field 'title'"
    assert err.fix is not None and "title: hello" in err.fix


def test_wrong_type_says_what_was_found() -> None:
    with pytest.raises(ScenarioError) as caught:
        _validate("title: t\nitems: abc\n")
    assert caught.value.message == "expected a list, got a string ('abc')"
    assert caught.value.line == 2
    assert caught.value.fix == "write a list: `items: [abc]`"


def test_nested_errors_name_the_dotted_field() -> None:
    with pytest.raises(ScenarioError) as caught:
        _validate("title: t\ninner:\n  n: 0\n")
    assert (caught.value.field, caught.value.line) == ("inner.n", 3)
    assert "must be >= 1" in caught.value.message


def test_several_errors_are_all_listed_with_their_lines() -> None:
    with pytest.raises(ScenarioError) as caught:
        _validate("title: [1]\nitems: 3\ninner:\n  n: zero\n")
    err = caught.value
    assert err.line == 1 and err.field == "title"
    assert "also line 2 items:" in err.message
    assert "also line 4 inner.n: expected a whole number" in err.message


def test_unknown_key_suggests_the_field_it_resembles() -> None:
    class Strict(Doc, extra="forbid"):
        pass

    data, lines = load_yaml_text("titel: t\n", file="doc.yaml")
    with pytest.raises(ScenarioError) as caught:
        validate(Strict, data, file="doc.yaml", lines=lines, error_cls=ScenarioError)
    assert "did you mean 'title'?" in caught.value.message
    assert "missing field" not in caught.value.message  # the typo explains it


def test_empty_file_lists_the_required_fields() -> None:
    with pytest.raises(ScenarioError) as caught:
        validate(Doc, None, file="doc.yaml", lines={}, error_cls=ScenarioError)
    assert caught.value.message == "the file is empty"
    assert "title" in (caught.value.fix or "")


def test_did_you_mean() -> None:
    assert did_you_mean("desginer", ["pm", "designer", "engineer"]) == "designer"
    assert did_you_mean("Wirte_File", ["read_file", "write_file"]) == "write_file"
    assert did_you_mean("zzz", ["pm", "designer"]) is None


def test_field_name_and_nearest_line() -> None:
    assert field_name(("steps", 0, "speaker", 1)) == "steps[0].speaker[1]"
    assert nearest_line({(): 1, ("a",): 4}, ("a", "b", 2)) == 4


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("sk-live-0123456789abcdef\n", "a string of 24 characters"),
        ("- sk-live-0123456789\n- 987654321\n", "a list"),
        ("987654321\n", "a number"),
        ("true\n", "true or false"),
    ],
)
def test_a_file_that_is_no_mapping_is_described_never_quoted(
    tmp_path: Path, content: str, kind: str
) -> None:
    # `staffroom run openai_key.txt`: the error says what the file holds, not what it says.
    path = tmp_path / "openai_key.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        Catalog().scenario(str(path))
    shown = str(caught.value)
    assert caught.value.message == f"the file holds {kind}, not `key: value` lines"
    assert "sk-live" not in shown and "987654321" not in shown


def test_a_long_field_value_is_described_not_echoed() -> None:
    secret = "sk-live-" + "x" * 60
    with pytest.raises(ScenarioError) as caught:
        _validate(f"title: t\nitems: {secret}\n")
    assert caught.value.message == "expected a list, got a string"
    assert secret not in str(caught.value) and caught.value.fix == "write a list: `items: [...]`"
