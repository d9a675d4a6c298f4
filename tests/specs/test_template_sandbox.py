"""Templates render in a bounded sandbox: expensive or broken ones are named errors, early."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import PromptTemplateError, ScenarioError
from framework.prompts.environment import PromptRenderer
from framework.prompts.sandbox import render_string
from framework.specs import Catalog, load_scenario

HOSTILE = {
    "range": "{{ range(10**9)|list }}",
    "repeat": "{{ 'x' * 10**9 }}",
    "power": "{{ 9 ** 999999 }}",
    "nested-loops": "{% for i in range(99999) %}{% for j in range(99999) %}"
    "{% endfor %}{% endfor %}",
    "doubling": "{% set ns = namespace(s='x') %}"
    "{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "macro-doubling": "{% macro f(s) %}{{ f(s ~ s) }}{% endmacro %}{{ f('x') }}",
    "center": "{{ 'x'|center(10**9) }}",
    "ljust": "{{ 'x'.ljust(10**9) }}",
    "printf": "{{ '%999999999d' % 1 }}",
    "format-filter": "{{ '%999999999d'|format(1) }}",
    "str-format": "{{ '{:>999999999}'.format(1) }}",
    "join": "{{ range(99999)|join('x' * 1000) }}",
    "replace-chain": "{{ 'ab'|replace('', 'abcd' * 100)|replace('', 'abcd' * 100)"
    "|replace('', 'abcd' * 100) }}",
    "buffered-output": "{% set x %}{% for i in range(99999) %}{{ 'y' * 100 }}{% endfor %}"
    "{% endset %}{{ x|length }}",
    "lipsum": "{{ lipsum(10**6) }}",
    "private": "{{ ''.__class__.__mro__ }}",
    "mutate": "{% set l = [1] %}{{ l.append(2) }}",
    "zero": "{{ 1 / 0 }}",
    "undefined": "{{ nope }}",
    "recursion": "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
}


@pytest.mark.parametrize("source", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_templates_are_named_errors(source: str) -> None:
    with pytest.raises(PromptTemplateError) as caught:
        render_string(source, {}, label="the sop template")
    assert str(caught.value).startswith("the sop template")


def test_the_error_names_the_template_line() -> None:
    with pytest.raises(PromptTemplateError, match=r"^t, line 3: range\(1000000000\)"):
        render_string("a\nb\n{{ range(10**9)|list }}", {}, label="t")


def test_ordinary_templates_still_work() -> None:
    source = (
        "{{ best('a') }} {{ 3 * 4 }} {{ [1, 2, 3]|join(', ') }} {{ 'a b'|replace(' ', '-') }} "
        "{{ '%.1f'|format(2.25) }} {{ '{:,}'.format(1234567) }} {{ 'x' * 3 }}"
        "{% for i in range(3) %}{{ loop.index }}{% endfor %} {{ 'ab'|center(6) }}|"
        "{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% endfor %}"
        "{{ ns.n }}"
    )
    out = render_string(source, {"best": lambda s: f"<{s}>"}, label="t")
    assert out == "<a> 12 1, 2, 3 a-b 2.2 1,234,567 xxx123   ab  |10"


def test_a_card_template_bomb_is_a_prompt_template_error(tmp_path: Path) -> None:
    override = tmp_path / "pm.j2"
    override.write_text("I am {{ card }}.\n{{ range(10**9)|list }}", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match=r"pm.j2, line 2: range"):
        PromptRenderer().render(
            "employee_system.j2", {"card": "pm"}, language="zh", override=override
        )


PROJECT_SCENARIO = """\
id: room
title: Room
participants: [pm, engineer, designer]
humans: [author]
announcement:
  text: 开会
  sop: "{sop}"
"""


def _problems(tmp_path: Path, shipped: Catalog, sop: str) -> list[ScenarioError]:
    path = tmp_path / "room.yaml"
    path.write_text(PROJECT_SCENARIO.replace("{sop}", sop), encoding="utf-8")
    problems = shipped.scenario_problems(load_scenario(path))
    assert all(isinstance(p, ScenarioError) for p in problems)
    return [p for p in problems if isinstance(p, ScenarioError)]


def test_the_sop_slot_is_rendered_when_checked(tmp_path: Path, shipped: Catalog) -> None:
    [problem] = _problems(tmp_path, shipped, "{{ range(10**9)|list }}")
    assert (problem.field, problem.line) == ("announcement.sop", 7)
    assert "more than 100,000 items" in problem.message
    assert problem.file == str(tmp_path / "room.yaml")


def test_best_sop_needs_a_quoted_id(tmp_path: Path, shipped: Catalog) -> None:
    sop = "{% set x = 'tech-article' %}{{ best_sop(x) }}"
    [problem] = _problems(tmp_path, shipped, sop)
    assert "must be written in quotes" in problem.message


def test_a_slot_that_renders_too_long_is_refused(tmp_path: Path, shipped: Catalog) -> None:
    [problem] = _problems(tmp_path, shipped, "{{ best_sop('tech-article') }}{{ 'x' * 25000 }}")
    assert "renders to 25," in problem.message and "20,000" in problem.message


def test_a_good_slot_passes(tmp_path: Path, shipped: Catalog) -> None:
    assert _problems(tmp_path, shipped, "{{ best_sop('tech-article') }}") == []
