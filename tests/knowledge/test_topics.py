"""Topic files (layer 4): one markdown file per topic, updated in place."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from framework.errors import InputError, UnknownNameError
from framework.knowledge.topic_file import Superseded
from framework.knowledge.topics import TopicStore

DAY = date(2026, 5, 30)


class Clock:
    def __init__(self) -> None:
        self.day = DAY

    def __call__(self) -> date:
        return self.day


def test_a_topic_is_created_then_updated_in_place(tmp_path: Path) -> None:
    clock = Clock()
    store = TopicStore(tmp_path, today=clock)
    made = store.update("跳出率 优先级", "learning", add=["一切以数据为依据", "先搭框架再看数据"])
    assert made.created and made.changed
    path = tmp_path / "learning" / "跳出率优先级.md"
    assert made.topic.path == path

    clock.day = date(2026, 6, 2)
    # Another spelling of the title, another category asked for: still the same file.
    change = store.update(
        "跳出率优先级",
        "strategy",
        add=["一切以数据为依据。", "每周看一次基线"],
        replace={"先搭框架再看数据": "价值看实际影响而非产出数量"},
    )
    assert (change.created, change.added, change.replaced) == (
        False,
        ["每周看一次基线"],
        [("先搭框架再看数据", "价值看实际影响而非产出数量")],
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md")) == [
        "learning/跳出率优先级.md"
    ]
    assert path.read_text(encoding="utf-8") == (
        "---\n"
        "title: 跳出率 优先级\n"
        "category: learning\n"
        "last_review: 2026-05-30\n"
        "changes:\n"
        "- date: 2026-05-30\n"
        "  note: created (2 added)\n"
        "- date: 2026-06-02\n"
        "  note: added 1, replaced 1\n"
        "---\n"
        "- 一切以数据为依据\n"
        "- 价值看实际影响而非产出数量\n"
        "- 每周看一次基线\n"
        "\n"
        "## Superseded\n"
        '- 先搭框架再看数据 (superseded by "价值看实际影响而非产出数量", 2026-06-02)\n'
    )
    assert store.current_entries("跳出率优先级") == [
        "一切以数据为依据",
        "价值看实际影响而非产出数量",
        "每周看一次基线",
    ]
    assert store.show("跳出率优先级").superseded == (
        Superseded("先搭框架再看数据", "价值看实际影响而非产出数量", date(2026, 6, 2)),
    )


def test_nothing_new_writes_nothing(tmp_path: Path) -> None:
    store = TopicStore(tmp_path, today=Clock())
    store.update("Site Map", "team", add=["home -> blog"], note="first map")
    path = tmp_path / "team" / "site-map.md"
    before = path.read_bytes()

    change = store.update("site-map", "team", add=["Home -> Blog"])
    assert not change.changed and change.added == []
    assert path.read_bytes() == before
    assert [c.note for c in store.show("Site Map").changes] == ["first map"]


def test_a_replace_that_matches_nothing_keeps_the_new_text(tmp_path: Path) -> None:
    store = TopicStore(tmp_path, today=Clock())
    store.update("pricing", "customers", add=["basic plan 99"])
    change = store.update("pricing", "customers", replace={"pro plan 199": "pro plan 249"})
    assert change.not_found == ["pro plan 199"]
    assert store.current_entries("pricing") == ["basic plan 99", "pro plan 249"]


def test_change_notes_are_capped(tmp_path: Path) -> None:
    store = TopicStore(tmp_path, today=Clock(), max_changes=3)
    for n in range(5):
        store.update("notes", "learning", add=[f"entry {n}"], note=f"change {n}")
    assert [c.note for c in store.show("notes").changes] == ["change 2", "change 3", "change 4"]
    assert len(store.current_entries("notes")) == 5


def test_review_and_stale(tmp_path: Path) -> None:
    clock = Clock()
    store = TopicStore(tmp_path, today=clock)
    store.update("old", "learning", add=["a"])
    clock.day = DAY + timedelta(days=50)
    store.update("new", "strategy", add=["b"])

    today = DAY + timedelta(days=100)
    assert [t.slug for t in store.stale(90, today)] == ["old"]
    assert [t.slug for t in store.stale(50, today)] == ["old", "new"]
    store.review("old", day=today)
    assert [t.slug for t in store.stale(90, today)] == []
    assert store.show("old").last_review == today


def test_forget_removes_entries_and_topics(tmp_path: Path) -> None:
    store = TopicStore(tmp_path, today=Clock())
    store.update("team", "team", add=["scott 回复很快", "alice 手机 138-0000"])
    store.update("team", "team", replace={"scott 回复很快": "scott 下午回复"})
    store.update("customers", "customers", add=["ACME 关心 Scott 的报价", "ACME 年底续约"])
    store.update("scott", "team", add=["Scott 的生日是 5 月"])

    removed = store.remove_entry("Scott")
    assert sorted((r.slug, r.text) for r in removed) == [
        ("customers", "ACME 关心 Scott 的报价"),
        ("scott", "Scott 的生日是 5 月"),
        ("team", "scott 下午回复"),
        ("team", 'scott 回复很快 (superseded by "scott 下午回复", 2026-05-30)'),
    ]
    team = store.show("team")
    assert (team.entries, team.superseded) == (("alice 手机 138-0000",), ())
    assert "scott" not in team.path.read_text(encoding="utf-8").lower()
    assert team.changes[-1].note == "forgot 2 on request"
    # A topic left with nothing is deleted: its title alone would still say what it held.
    assert store.find("scott") is None

    gone = store.remove_topic("customers")
    assert gone.entries == ("ACME 年底续约",)
    assert [t.slug for t in store.list()] == ["team"]
    with pytest.raises(UnknownNameError) as caught:
        store.show("customers")
    assert "team/team" in (caught.value.fix or "")


def test_list_show_and_categories(tmp_path: Path) -> None:
    store = TopicStore(tmp_path, categories=["learning", "ops"], today=Clock())
    store.update("b", "ops", add=["x"])
    store.update("a", "learning", add="one entry, not one per character")
    assert [(t.category, t.slug) for t in store.list()] == [("learning", "a"), ("ops", "b")]
    assert store.current_entries("a") == ["one entry, not one per character"]
    assert store.current_entries("missing") == []

    with pytest.raises(InputError) as caught:
        store.update("c", "strategy", add=["x"])
    assert caught.value.field == "category" and "learning, ops" in (caught.value.fix or "")
    with pytest.raises(InputError):
        store.update("!!", "ops", add=["x"])
    with pytest.raises(InputError):
        store.update("c", "ops", add=["  "])


def test_a_hand_edited_file_is_read_as_meant(tmp_path: Path) -> None:
    path = tmp_path / "learning" / "style.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        "---\ntitle: Style\ncategory: learning\nlast_review: 2026-05-01\n---\n"
        "- short sentences,\n  one idea each\n-\n\n## superseded\n- long sentences\n",
        encoding="utf-8",
    )
    store = TopicStore(tmp_path, today=Clock())
    topic = store.show("style")
    assert topic.entries == ("short sentences, one idea each",)
    assert topic.superseded == (Superseded("long sentences"),)
    assert topic.changes == ()

    store.update("style", "learning", add=["active voice"])
    assert store.current_entries("style") == ["short sentences, one idea each", "active voice"]
    assert "- long sentences\n" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("- no front matter\n", 1, None),
        ("---\ntitle: x\ncategory: learning\n", 1, None),
        ("---\ntitle: x\ncategory: learning\nlast_review: [2026\n---\n- a\n", 4, None),
        ("---\ntitle: x\ncategory: learning\nlast_reveiw: 2026-05-01\n---\n", 4, "last_reveiw"),
        ("---\ntitle: x\ncategory: learning\nlast_review: soon\n---\n", 4, "last_review"),
        ("---\ntitle: x\ncategory: team\nlast_review: 2026-05-01\n---\n", 3, "category"),
        ("---\ntitle: x\ncategory: learning\nlast_review: 2026-05-01\n---\n- a\nprose\n", 7, None),
    ],
)
def test_a_hand_broken_topic_names_the_line_and_is_not_touched(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    path = tmp_path / "learning" / "x.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    store = TopicStore(tmp_path, today=Clock())

    with pytest.raises(InputError) as caught:
        store.show("x")
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, field)
    assert caught.value.fix

    for write in (
        lambda: store.update("x", "learning", add=["new"]),
        lambda: store.review("x"),
        lambda: store.remove_entry("a"),
    ):
        with pytest.raises(InputError):
            write()
    assert path.read_text(encoding="utf-8") == text
