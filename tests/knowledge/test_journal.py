"""Journals (layer 1): one append-only markdown file per employee per day."""

from __future__ import annotations

from datetime import date, time
from pathlib import Path
from typing import Any

import pytest

from framework.errors import InputError
from framework.knowledge.journal import Journal, JournalEntry

DAY = date(2026, 5, 30)
ENTRIES = [
    JournalEntry("note", "提纲已交给 alice"),
    JournalEntry("observation", "审核环节是瓶颈\n工单积压在草稿状态"),
    JournalEntry("question", "要不要先灰度 10%？"),
]


def test_append_writes_a_readable_block_and_reads_it_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    assert journal.append("pm", DAY, "dm:alice@pm", ENTRIES, entry_id="end-1", at=time(14, 5))

    path = tmp_path / "pm" / "2026-05-30.md"
    assert path.read_text(encoding="utf-8") == (
        "# Journal: pm, 2026-05-30\n"
        "\n"
        "## 14:05 dm:alice@pm (entry end-1)\n"
        "- note: 提纲已交给 alice\n"
        "- observation: 审核环节是瓶颈\n"
        "  工单积压在草稿状态\n"
        "- question: 要不要先灰度 10%？\n"
    )
    day = journal.read("pm", DAY)
    assert [(b.time, b.session, b.entry_id, b.line) for b in day.blocks] == [
        ("14:05", "dm:alice@pm", "end-1", 3)
    ]
    assert day.entries == ENTRIES


def test_the_same_entry_id_is_appended_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    assert journal.append("pm", DAY, "room:r1", ENTRIES, entry_id="end-1", at=time(9, 0))
    before = (tmp_path / "pm" / "2026-05-30.md").read_bytes()

    # A session end re-run after a crash: nothing is added twice.
    assert not journal.append("pm", DAY, "room:r1", ENTRIES, entry_id="end-1", at=time(9, 1))
    assert (tmp_path / "pm" / "2026-05-30.md").read_bytes() == before

    assert journal.append("pm", DAY, "room:r2", ENTRIES[:1], entry_id="end-2", at=time(10, 0))
    assert [b.entry_id for b in journal.read("pm", DAY).blocks] == ["end-1", "end-2"]


def test_appending_keeps_hand_edits_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "pm" / "2026-05-30.md"
    path.parent.mkdir(parents=True)
    hand = "# my day\n\n## 08:00 dm:bob@pm (entry mine)\n- note: 手写的一条"  # no final newline
    path.write_text(hand, encoding="utf-8")

    Journal(tmp_path).append("pm", DAY, "dm:bob@pm", ENTRIES[:1], entry_id="e2", at=time(9, 0))

    text = path.read_text(encoding="utf-8")
    assert text.startswith(hand + "\n")
    assert [b.entry_id for b in Journal(tmp_path).read("pm", DAY).blocks] == ["mine", "e2"]


def test_days_and_entries_since(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for day in (date(2026, 5, 28), date(2026, 5, 30), date(2026, 5, 29)):
        journal.append("pm", day, "dm:a@pm", ENTRIES[:1], entry_id=f"e-{day}", at=time(8, 0))
    (tmp_path / "pm" / "notes.md").write_text("someone's own file\n", encoding="utf-8")

    assert journal.days("pm") == [date(2026, 5, 28), date(2026, 5, 29), date(2026, 5, 30)]
    assert [d.day for d in journal.entries_since("pm", date(2026, 5, 29))] == [
        date(2026, 5, 29),
        date(2026, 5, 30),
    ]
    assert journal.days("nobody") == []
    assert journal.read("pm", date(2026, 1, 1)).blocks == ()


def test_nothing_to_write_writes_nothing(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    blank = [JournalEntry("note", "  \n ")]
    assert not journal.append("pm", DAY, "dm:a@pm", blank, entry_id="e1")
    assert not (tmp_path / "pm").exists()


@pytest.mark.parametrize("employee", ["../etc", "a/b", ".hidden", ""])
def test_an_employee_name_never_leaves_the_root(tmp_path: Path, employee: str) -> None:
    with pytest.raises(InputError) as caught:
        Journal(tmp_path / "journals").append(
            employee, DAY, "dm:a@pm", ENTRIES, entry_id="e1", at=time(8, 0)
        )
    assert caught.value.field == "employee"
    assert not any(tmp_path.rglob("*.md"))


def test_bad_session_entry_id_and_kind_are_refused(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with pytest.raises(InputError, match="session"):
        journal.append("pm", DAY, "dm: a", ENTRIES, entry_id="e1")
    with pytest.raises(InputError, match="entry_id"):
        journal.append("pm", DAY, "dm:a@pm", ENTRIES, entry_id="e (1)")
    idea: Any = "idea"  # what a model's answer may say
    with pytest.raises(InputError) as caught:
        journal.append("pm", DAY, "dm:a@pm", [JournalEntry(idea, "x")], entry_id="e1")
    assert caught.value.field == "kind"
    assert not (tmp_path / "pm").exists()


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("# t\n\n## 9 o'clock dm:a@pm\n- note: x\n", 3, "heading"),
        ("# t\n\n## 09:00 dm:a@pm (entry e1)\n- idea: x\n", 4, "entry"),
        ("# t\nstray text\n", 2, None),
        ("# t\n## 09:00 s (entry e1)\n## 10:00 s (entry e1)\n", 3, "heading"),
    ],
)
def test_a_hand_broken_journal_names_the_line_and_is_not_touched(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    path = tmp_path / "pm" / "2026-05-30.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    journal = Journal(tmp_path)

    with pytest.raises(InputError) as caught:
        journal.read("pm", DAY)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, field)
    assert caught.value.fix

    with pytest.raises(InputError):
        journal.append("pm", DAY, "dm:a@pm", ENTRIES, entry_id="new", at=time(11, 0))
    assert path.read_text(encoding="utf-8") == text


def test_a_journal_that_is_not_utf8_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "pm" / "2026-05-30.md"
    path.parent.mkdir(parents=True)
    data = "# 日志\n- note: 审核\n".encode("gbk")
    path.write_bytes(data)

    with pytest.raises(InputError) as caught:
        Journal(tmp_path).append("pm", DAY, "dm:a@pm", ENTRIES, entry_id="e1")
    assert "UTF-8" in caught.value.message
    assert caught.value.fix is not None and "iconv" in caught.value.fix
    assert path.read_bytes() == data


def test_a_folder_in_a_journals_place_is_named(tmp_path: Path) -> None:
    (tmp_path / "pm" / "2026-05-30.md").mkdir(parents=True)
    with pytest.raises(InputError, match="is a folder") as caught:
        Journal(tmp_path).read("pm", DAY)
    assert caught.value.file == str(tmp_path / "pm" / "2026-05-30.md")
