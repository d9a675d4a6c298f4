"""The library (layer 5): shared for all, isolated for the entitled, promotion with a source."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from framework.errors import InputError
from framework.knowledge.library import Library, NotEntitledError
from framework.knowledge.topic_file import Promotion
from framework.knowledge.topics import TopicStore
from framework.specs.knowledge_file import KnowledgeConfig

DAY = date(2026, 5, 30)


def today() -> date:
    return DAY


@pytest.fixture
def library(tmp_path: Path) -> Library:
    return Library(tmp_path / "library", isolated_readers=["finance"], today=today)


@pytest.fixture
def private(tmp_path: Path) -> TopicStore:
    store = TopicStore(tmp_path / "knowledge" / "pm", today=today)
    store.update(
        "Agent Communication",
        "team",
        add=["结构化请求 4-8 小时内有回复", "跳出率我按页面类型分开看"],
    )
    store.update(
        "agent communication", "team", replace={"结构化请求 4-8 小时内有回复": "结构化请求当天回复"}
    )
    return store


def test_everyone_reads_shared_only_the_entitled_read_isolated(library: Library) -> None:
    assert library.reader("pm") == ("shared",)
    assert library.reader("finance") == ("shared", "isolated")
    library.store("finance", "isolated").update("margins", "strategy", add=["毛利 38%"])

    assert library.current_entries("finance", "margins", "isolated") == ["毛利 38%"]
    assert library.list("pm") == []
    refused = (
        lambda: library.list("pm", "isolated"),
        lambda: library.show("pm", "margins", "isolated"),
        lambda: library.current_entries("pm", "margins", "isolated"),
        lambda: library.stale("pm", 0, "isolated"),
        lambda: library.store("pm", "isolated"),
    )
    for read in refused:
        with pytest.raises(NotEntitledError) as caught:
            read()
        assert caught.value.field == "reader"
        assert "isolated.readers" in (caught.value.fix or "")
    unknown: Any = "secret"
    with pytest.raises(InputError):
        library.list("pm", unknown)


def test_promote_copies_current_entries_with_their_source(
    library: Library, private: TopicStore
) -> None:
    change = library.promote(private, "agent-communication", by="pm", source="pm")
    assert change.created and change.changed
    topic = library.show("engineer", "agent communication")
    assert topic.path == library.path("shared") / "team" / "agent-communication.md"
    assert topic.title == "Agent Communication"
    # Current entries only: what was superseded in the private file stays there.
    assert topic.entries == ("结构化请求当天回复", "跳出率我按页面类型分开看")
    assert topic.promoted_from == (
        Promotion(source="pm", topic="team/agent-communication", by="pm", date=DAY),
    )
    assert [c.note for c in topic.changes] == ["promoted from pm (team/agent-communication) by pm"]

    before = topic.path.read_bytes()
    again = library.promote(private, "Agent Communication", by="pm", source="pm")
    assert not again.changed
    assert topic.path.read_bytes() == before


def test_promote_only_what_is_asked(library: Library, private: TopicStore) -> None:
    # The analyst's own heuristic stays private: the caller names what is general.
    library.promote(
        private, "agent-communication", by="pm", source="pm", entries=["结构化请求当天回复。"]
    )
    assert library.current_entries("pm", "agent-communication") == ["结构化请求当天回复"]

    with pytest.raises(InputError) as caught:
        library.promote(
            private,
            "agent-communication",
            by="pm",
            source="pm",
            entries=["结构化请求 4-8 小时内有回复"],
        )
    assert caught.value.field == "entries"  # superseded: not a current entry


def test_isolated_is_written_only_on_purpose_by_the_entitled(
    library: Library, private: TopicStore
) -> None:
    with pytest.raises(NotEntitledError):
        library.promote(private, "agent-communication", by="pm", source="pm", into="isolated")
    assert not any(library.path("isolated").rglob("*.md"))

    done = library.promote(
        private, "agent-communication", by="finance", source="pm", into="isolated"
    )
    assert done.changed
    assert library.list("pm") == []  # nothing reached shared

    isolated = library.store("finance", "isolated")
    with pytest.raises(InputError) as caught:
        library.promote(isolated, "agent-communication", by="finance", source="isolated")
    assert caught.value.field == "into"
    same_tree = TopicStore(library.path("isolated"))
    with pytest.raises(InputError):
        library.promote(same_tree, "agent-communication", by="finance", source="isolated")
    assert library.list("pm") == []


def test_promote_refuses_what_it_cannot_do(library: Library, private: TopicStore) -> None:
    with pytest.raises(InputError):
        library.promote(private, "no such topic", by="pm", source="pm")
    with pytest.raises(InputError):
        library.promote(library.store("pm"), "x", by="pm", source="pm")  # into itself
    with pytest.raises(InputError) as caught:
        library.promote(private, "agent-communication", by="../pm", source="pm")
    assert caught.value.field == "by"


def test_from_config_uses_the_projects_readers_and_categories(tmp_path: Path) -> None:
    config = KnowledgeConfig.model_validate(
        {"categories": ["learning", "ops"], "isolated": {"readers": ["ceo"]}}
    )
    library = Library.from_config(tmp_path, config, today=today)
    assert library.reader("ceo") == ("shared", "isolated")
    assert library.store("pm").categories == ("learning", "ops")
