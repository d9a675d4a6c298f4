"""Model specs, employee cards, scenarios and SOP cards on their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from framework.errors import CardError, ScenarioError, SopCardError
from framework.specs import (
    EmployeeCard,
    ModelSpec,
    Scenario,
    SopCard,
    load_card,
    load_scenario,
    load_sop_card,
)


@pytest.mark.parametrize(
    ("text", "provider", "label"),
    [
        ("simulated", "simulated", "simulated"),
        ("scripted", "scripted", "scripted"),
        ("openai:gpt-4o-mini", "openai", "openai:gpt-4o-mini"),
        (
            "import:langchain_anthropic.ChatAnthropic",
            "import",
            "import:langchain_anthropic.ChatAnthropic",
        ),
    ],
)
def test_model_shorthand(text: str, provider: str, label: str) -> None:
    spec = ModelSpec.model_validate(text)
    assert spec.provider == provider
    assert spec.label == label


def test_shorthand_with_a_url_and_a_name_from_models_yaml() -> None:
    spec = ModelSpec.model_validate("openai:gemma-3-270m@http://127.0.0.1:8080/v1")
    assert (spec.name, spec.base_url) == ("gemma-3-270m", "http://127.0.0.1:8080/v1")
    named = ModelSpec.model_validate("local")
    assert named.named == "local" and named.label == "local"


def test_model_mapping_and_defaults() -> None:
    spec = ModelSpec.model_validate(
        {"provider": "openai", "name": "qwen-plus", "base_url": "http://localhost:8000/v1"}
    )
    # A local server by URL needs no key; OpenAI's own endpoint reads OPENAI_API_KEY.
    assert spec.key_env is None
    assert ModelSpec.model_validate("openai:gpt-4o-mini").key_env == "OPENAI_API_KEY"
    assert ModelSpec.model_validate({"provider": "openai", "api_key_env": "K"}).key_env == "K"
    assert ModelSpec().label == "simulated"
    assert ModelSpec.model_validate({"options": {"delay": 0.2}}).options == {"delay": 0.2}
    assert ModelSpec.model_validate("simulated").api_key_env is None


@pytest.mark.parametrize(
    "bad",
    [
        "opnai:gpt-4o",
        "import:NoDots",
        "gpt 4",
        {"provider": "openai", "class_path": "a.B"},
        {"x": 1},
        {"context_window": 0},
        {"system_role": "assistant"},
    ],
)
def test_model_rejects(bad: object) -> None:
    with pytest.raises(ValidationError):
        ModelSpec.model_validate(bad)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


CARD = "id: writer\ndisplay_name: 写手\nrole: writer\npersona: 你是写手。\n"


def test_card_defaults_and_source(tmp_path: Path) -> None:
    card = load_card(_write(tmp_path, "writer.yaml", CARD))
    assert card.model is None and card.tools == [] and card.language is None
    # A card from before languages were stated keeps the language its persona is written in.
    assert card.writes_in == "zh"
    assert card.source == tmp_path / "writer.yaml"
    assert card.line_of("persona") == 4


def test_card_prompt_template_must_exist_and_parse(tmp_path: Path) -> None:
    _write(tmp_path, "prompts/writer.j2", "你是 {{ name }}。\n")
    card = load_card(_write(tmp_path, "a.yaml", CARD + "prompt_template: prompts/writer.j2\n"))
    assert card.prompt_template_path == tmp_path / "prompts" / "writer.j2"

    _write(tmp_path, "prompts/broken.j2", "ok\n{{ name \n")
    with pytest.raises(CardError) as caught:
        load_card(_write(tmp_path, "b.yaml", CARD + "prompt_template: prompts/broken.j2\n"))
    assert caught.value.file == str(tmp_path / "prompts" / "broken.j2")
    assert caught.value.line == 2


def test_card_id_must_be_a_slug(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.yaml", CARD.replace("id: writer", "id: Chief Writer"))
    with pytest.raises(CardError) as caught:
        load_card(path)
    assert caught.value.field == "id" and caught.value.line == 1
    assert "chief-writer" in (caught.value.fix or "")


def test_card_internal_fields_are_not_accepted_from_the_file(tmp_path: Path) -> None:
    with pytest.raises(CardError, match="unknown field 'source'"):
        load_card(_write(tmp_path, "d.yaml", CARD + "source: x\n"))
    assert "source" not in EmployeeCard.model_fields


SCENARIO = """\
id: demo
title: Demo
participants: [pm, engineer]
announcement:
  text: hello
  sop: >-
    {{ best_sop('a') }}{% if x %}{{ best_sop("b") ~ best_sop('a') }}{% endif %}
    {{ best_sop(name) }}{{ other('c') }}
"""


def test_referenced_sop_ids_walk_the_template(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, "s.yaml", SCENARIO))
    assert scenario.referenced_sop_ids() == ["a", "b"]
    assert scenario.humans == ["user"]
    assert scenario.settings.max_turns == 30
    assert scenario.settings.stop_words == ["/stop", "结束会议"]


def test_announcement_text_shorthand() -> None:
    scenario = Scenario.model_validate(
        {"id": "x", "title": "X", "participants": ["pm"], "announcement": "开会"}
    )
    assert scenario.announcement.text == "开会"
    assert scenario.referenced_sop_ids() == []


@pytest.mark.parametrize(
    ("patch", "field", "needle"),
    [
        ("participants: [pm, engineer, pm]", "participants[2]", "listed twice"),
        ("participants: []", "participants", "must not be empty"),
        ("humans: [pm]\nparticipants: [pm]", "humans[0]", "same name as a participant"),
        ("settings: {max_turns: 0}\nparticipants: [pm]", "settings.max_turns", ">= 1"),
        ("settings: {selector: llm}\nparticipants: [pm]", "settings.selector", "not one of"),
    ],
)
def test_scenario_checks(tmp_path: Path, patch: str, field: str, needle: str) -> None:
    text = "id: demo\ntitle: Demo\nannouncement: hi\n" + patch + "\n"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_write(tmp_path, "s.yaml", text))
    assert caught.value.field == field
    assert needle in caught.value.message
    assert caught.value.line is not None and caught.value.line >= 4
    assert caught.value.fix


def test_scenario_bad_sop_template_points_at_the_slot(tmp_path: Path) -> None:
    text = "id: d\ntitle: D\nparticipants: [pm]\nannouncement:\n  text: hi\n  sop: '{{ best_sop('\n"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_write(tmp_path, "s.yaml", text))
    assert (caught.value.field, caught.value.line) == ("announcement.sop", 6)


SOP = """\
---
id: demo
version: 2
scope: global
goal: 演示
steps:
  - {speaker: pm, do: 立题, tools: [write_file]}
  - {speaker: [designer, reviewer], do: 配图与自检, parallel: true, fallback: 找作者}
  - {speaker: engineer, do: 评估, waits_for_input: true}
change_log:
  - {version: 2, why: 先出提纲, from: "room:launch-41", by: alice}
---
Notes here.
"""


def test_sop_card_loads_with_file_lines(tmp_path: Path) -> None:
    card = load_sop_card(_write(tmp_path, "v2.md", SOP))
    assert card.ref == "demo@2"
    assert card.body == "Notes here."
    assert card.change_log[0].from_ == "room:launch-41"
    assert card.steps[1].speakers == ["designer", "reviewer"]
    assert card.line_of("steps", 1, "speaker", 1) == 8
    assert card.line_of("change_log", 0) == 11


def test_sop_render_text(tmp_path: Path) -> None:
    card = load_sop_card(_write(tmp_path, "v2.md", SOP))
    text = card.render_text()
    assert text.splitlines()[0] == "SOP demo@2：演示"
    assert "1. pm：立题（工具：write_file）" in text
    assert "2. designer、reviewer（并行）：配图与自检（兜底：找作者）" in text
    assert "3. engineer：评估（等待人工确认）" in text
    assert "1. pm: 立题 (tools: write_file)" in card.render_text(language="en")


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        ("version: 2", "version: 0", "version", ">= 1"),
        ("scope: global", "scope: team", "scope", "scope 'team'"),
        ("{speaker: pm, do: 立题, tools: [write_file]}", "{speaker: pm}", "steps[0].do", "missing"),
        ("tools: [write_file]", "tools: [wrte_file]", "steps[0].tools[0]", "'write_file'"),
        ("{version: 2, why", "{version: 3, why", "change_log[0].version", "version 3"),
        ("speaker: [designer, reviewer]", "speaker: [designer, 7]", "steps[1].speaker[1]", "7"),
        ("speaker: [designer, reviewer]", "speaker: {a: b}", "steps[1].speaker", "expected"),
        ("status", "status", "status", ""),
    ],
)
def test_sop_card_errors(tmp_path: Path, old: str, new: str, field: str, needle: str) -> None:
    if old == "status":
        text = SOP.replace("goal: 演示", "goal: 演示\nstatus: live")
    else:
        assert old in SOP
        text = SOP.replace(old, new)
    with pytest.raises(SopCardError) as caught:
        load_sop_card(_write(tmp_path, "v.md", text))
    assert caught.value.field == field
    assert needle in caught.value.message
    assert caught.value.line is not None and caught.value.line > 1
    assert caught.value.fix


def test_sop_front_matter_must_be_closed(tmp_path: Path) -> None:
    with pytest.raises(SopCardError, match="never closed"):
        load_sop_card(_write(tmp_path, "v.md", "---\nid: x\n"))


def test_sop_body_is_not_a_front_matter_field(tmp_path: Path) -> None:
    with pytest.raises(SopCardError) as caught:
        load_sop_card(_write(tmp_path, "v.md", SOP.replace("goal: 演示", "goal: 演示\nbody: x")))
    assert caught.value.field == "body" and caught.value.line == 6


def test_sop_card_body_and_sources_are_not_schema_fields() -> None:
    schema = SopCard.model_json_schema()
    assert "body" not in schema["properties"]
    assert "source" not in schema["properties"]
