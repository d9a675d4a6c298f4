"""knowledge.yaml: categories, isolated readers, selective loading, reflection defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.specs.knowledge_file import (
    DEFAULT_CATEGORIES,
    KnowledgeFileError,
    load_knowledge_file,
    topic_slug,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "knowledge.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_or_empty_file_means_the_defaults(tmp_path: Path) -> None:
    for config in (
        load_knowledge_file(tmp_path / "knowledge.yaml"),
        load_knowledge_file(write(tmp_path, "# nothing yet\n")),
    ):
        assert tuple(config.categories) == DEFAULT_CATEGORIES
        assert config.isolated.readers == []
        assert config.loading == {}
        assert config.reflection.interval == "biweekly"
        assert config.what_to_load("writing") == []


def test_a_full_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "categories: [learning, strategy, team, customers, ops]\n"
        "isolated:\n"
        "  readers: [finance, ceo-assistant]\n"
        "loading:\n"
        "  writing: [style, Positioning]\n"
        "  auditing: [Site Map, 'category:strategy']\n"
        "  销售: [定价 策略]\n"
        "reflection:\n"
        "  interval: 10d\n",
    )
    config = load_knowledge_file(path)
    assert config.source == path
    assert config.categories[-1] == "ops"
    assert config.is_isolated_reader("finance") and not config.is_isolated_reader("pm")
    assert config.what_to_load("writing") == ["style", "positioning"]
    assert config.what_to_load(" Auditing ") == ["site-map", "category:strategy"]
    assert config.what_to_load("销售") == ["定价策略"]
    assert config.what_to_load("sales") == []
    assert config.reflection.interval == "10d"
    assert config.line_of("loading", "auditing") == 6


@pytest.mark.parametrize(
    ("text", "line", "field", "fix"),
    [
        ("categorys: [a]\n", 1, "categorys", "rename 'categorys' to 'categories'"),
        ("isolated:\n  readers: finance\n", 2, "isolated.readers", "write a list"),
        ("isolated:\n  readers: [../x]\n", 2, "isolated.readers[0]", "letters, digits"),
        (
            "loading:\n  auditing: [site-map, 'category:stratgy']\n",
            2,
            "loading.auditing[1]",
            "use one of: learning",
        ),
        ("loading:\n  writing: ['!!']\n", 2, "loading.writing[0]", "topic slug"),
        ("reflection:\n  interval: fortnightly\n", 2, "reflection.interval", "10d"),
        ("categories: [learning, learning]\n", 1, "categories[1]", "list each once"),
        ("categories: []\n", 1, "categories", "add at least one"),
        ("categories: [Learning Notes]\n", 1, "categories[0]", "learning-notes"),
        ("loading:\n  writing: [a]\n  writing: [b]\n", 3, "loading.writing", "keep one"),
        ("loading: [writing\n", 1, None, "close the '['"),
    ],
)
def test_mistakes_name_the_line_the_field_and_the_fix(
    tmp_path: Path, text: str, line: int, field: str | None, fix: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(KnowledgeFileError) as caught:
        load_knowledge_file(path)
    error = caught.value
    assert (error.file, error.line, error.field) == (str(path), line, field)
    assert fix in (error.fix or ""), error.fix
    assert path.read_text(encoding="utf-8") == text


def test_the_slug_rule_keeps_chinese_and_is_path_safe() -> None:
    assert topic_slug("跳出率 优先级") == topic_slug("跳出率优先级") == "跳出率优先级"
    assert topic_slug("Site Map") == topic_slug("Ｓｉｔｅ＿Ｍａｐ！") == "site-map"
    assert topic_slug("AI 写作指南") == "ai-写作指南"
    assert topic_slug("../../etc/passwd") == "etc-passwd"
    assert topic_slug("!!") == ""
    assert len(topic_slug("长" * 300)) == 80
