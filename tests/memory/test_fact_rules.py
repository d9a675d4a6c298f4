"""Memory never merges two facts into one; a correction supersedes, visibly, outside the prompt.

The cases come from the third-party memtrust fixtures that failed before: two unrelated
``Update:`` lines treated as one key, distinct facts sharing a sentence shape merged
(similarity 0.82-0.91), a fact and its correction both kept in the prompt, a date twice on a
HISTORY.md line, and temp files a killed writer leaves.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from framework.memory.fact_rules import anchors, attribute_key, same_fact
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.memory_tool import describe_change

DAY = date(2026, 12, 1)


def test_discourse_labels_are_not_attributes() -> None:
    assert attribute_key("Update: the API moved to v2") is None
    assert attribute_key("补充：周五开会") is None
    assert attribute_key("On day 19, Sam noted the following: a long sentence") is None
    assert attribute_key("偏好语言: English") == "偏 好 语 言"
    assert attribute_key("Alice's phone: 555-0101") is not None
    assert attribute_key("会议 15:00 开始") is None
    # A Chinese character is half a word: a seven-character attribute is still a key.
    assert attribute_key("刘洋的负责模块：支付") is not None
    assert attribute_key("刘洋昨天在周会上说他下周开始负责支付模块：需要交接") is None


def test_facts_with_other_numbers_or_names_are_other_facts() -> None:
    a = "On day 19, Sam noted that the incident postmortem was filed late"
    b = "On day 103, Sam noted that the compliance audit was filed late"
    assert anchors(a) == {"19", "sam"} and not same_fact(a, b)
    assert not same_fact("Sam owns INC-204", "Sam owns INC-207")
    assert same_fact("prefers short answers", "Prefers short answers.")


def test_two_update_lines_and_same_shaped_facts_are_all_kept(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md", today=lambda: DAY)
    lines = [
        "Update: the staging cluster moved to eu-west-2",
        "Update: the design review is now on Thursdays",
        "On day 19, Sam noted that the incident postmortem was filed late",
        "On day 103, Sam noted that the compliance audit was filed late",
    ]
    changes = [memory.add("facts", line) for line in lines]
    assert [c.action for c in changes] == ["added"] * 4
    assert memory.read().sections["facts"] == lines
    # The model is shown what it may have meant to replace.
    assert lines[2] in changes[3].similar
    assert "use replace if it updates one" in describe_change(changes[3])


def test_a_correction_supersedes_outside_the_prompt(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md", today=lambda: DAY)
    memory.add("preferences", "偏好语言: 中文", source="dm:alice@pm")
    change = memory.add("preferences", "偏好语言: English", source="dm:alice@pm")
    assert change.action == "replaced" and change.old == "偏好语言: 中文"
    assert memory.read().sections["preferences"] == ["偏好语言: English"]
    assert "中文" not in memory.path.read_text(encoding="utf-8"), "not in what prompts show"
    facts = json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))
    assert facts["superseded"] == [
        {"section": "preferences", "old": "偏好语言: 中文", "new": "偏好语言: English",
         "date": "2026-12-01"},
    ]  # fmt: skip
    record = facts["entries"]["偏好语言: English"]
    assert record == {"added": "2026-12-01", "confirmed": "2026-12-01", "source": "dm:alice@pm"}


def test_saying_a_fact_again_confirms_it(tmp_path: Path) -> None:
    days = iter([DAY, date(2026, 12, 9)])
    memory = MemoryFile(tmp_path / "MEMORY.md", today=lambda: next(days))
    memory.add("facts", "Alice's team: platform", source="dm:alice@pm")
    assert memory.add("facts", "Alice's team: platform", source="room:r1").action == "unchanged"
    record = json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))["entries"]
    assert record["Alice's team: platform"] == {
        "added": "2026-12-01", "confirmed": "2026-12-09", "source": "dm:alice@pm",
    }  # fmt: skip


def test_one_date_per_history_line_and_no_stale_temp_files(tmp_path: Path) -> None:
    history = HistorySummary(tmp_path / "HISTORY.md")
    history.append([(DAY, "2026-12-01 alice：定了发布日期")])
    assert history.lines() == ["2026-12-01 alice：定了发布日期"]

    memory = MemoryFile(tmp_path / "m" / "MEMORY.md")
    memory.add("facts", "first")
    killed = tmp_path / "m" / ".MEMORY.md.abc123"  # what a writer killed mid-write leaves
    killed.write_text("half", encoding="utf-8")
    (tmp_path / ".history-tmp-xyz").write_text("half", encoding="utf-8")
    memory.add("facts", "second")
    history.append([(DAY, "another line")])
    assert not killed.exists() and not (tmp_path / ".history-tmp-xyz").exists()


def test_forgetting_a_fact_forgets_its_superseded_values_too(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md", today=lambda: DAY)
    memory.add("facts", "alice-salary: 12000")
    memory.add("facts", "alice-salary: 12345")
    memory.add("preferences", "偏好语言: 中文")
    memory.add("preferences", "偏好语言: English")
    assert [r.old for r in memory.forget("alice-salary")] == ["alice-salary: 12345"]
    left = (tmp_path / "facts.json").read_text(encoding="utf-8")
    assert "salary" not in left and "偏好语言: 中文" in left
