"""MemoryFile on real files: format, near-duplicate adds, replace/remove, cap, lenient read."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import InputError, MemoryCapExceeded
from framework.memory.entries import ENGLISH_TITLES
from framework.memory.memory_file import MemoryChange, MemoryDoc, MemoryFile

CHINESE = """\
# 用户身份
姓名: alice
团队: AI 平台
§
# 项目上下文
项目代号: 数字员工平台
§
# 个性化偏好
偏好语言: English
§
# 关键事实
周五 15:00 与设计团队评审
"""

ENGLISH = """\
# User identity
name: alice
§
# Project context
code name: staffroom
§
# Preferences
prefers short answers
§
# Key facts
design review on Friday 15:00
"""


def test_missing_file_is_empty(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "nope" / "MEMORY.md")
    doc = memory.read()
    assert doc.sections == {"identity": [], "project": [], "preferences": [], "facts": []}
    assert doc.warnings == []
    assert memory.text() == ""


def test_round_trip_with_chinese_titles(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(CHINESE, encoding="utf-8")
    memory = MemoryFile(path)
    doc = memory.read()
    assert doc.warnings == []
    assert doc.sections["identity"] == ["姓名: alice", "团队: AI 平台"]
    assert doc.sections["facts"] == ["周五 15:00 与设计团队评审"]
    assert memory.render(doc) == CHINESE
    assert memory.text() == CHINESE


def test_round_trip_with_english_titles(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    memory = MemoryFile(path, titles=ENGLISH_TITLES)
    for section, entry in [
        ("identity", "name: alice"),
        ("project", "code name: staffroom"),
        ("preferences", "prefers short answers"),
        ("facts", "design review on Friday 15:00"),
    ]:
        assert memory.add(section, entry).action == "added"
    assert path.read_text(encoding="utf-8") == ENGLISH
    assert memory.read() == MemoryDoc(
        {
            "identity": ["name: alice"],
            "project": ["code name: staffroom"],
            "preferences": ["prefers short answers"],
            "facts": ["design review on Friday 15:00"],
        }
    )


def test_other_language_titles_are_recognised_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(ENGLISH, encoding="utf-8")
    doc = MemoryFile(path, language="zh").read()  # configured for Chinese titles
    assert doc.sections["preferences"] == ["prefers short answers"]
    assert "line 1: title 'User identity' read as identity ('用户身份')" in doc.warnings
    assert MemoryFile(path).read().warnings == [], "unconfigured, a file keeps its own titles"


def test_add_of_same_key_replaces_in_chinese(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("preferences", "偏好语言: 中文")
    change = memory.add("preferences", "偏好语言：English")
    assert change == MemoryChange("replaced", "preferences", "偏好语言: 中文", "偏好语言：English")
    assert memory.read().sections["preferences"] == ["偏好语言：English"]


def test_add_of_near_duplicate_replaces_in_english(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("preferences", "prefers short answers")
    memory.add("preferences", "likes tables")
    change = memory.add("preferences", "Prefers short answers.")
    assert change.action == "replaced"
    assert change.old == "prefers short answers"
    assert memory.read().sections["preferences"] == ["Prefers short answers.", "likes tables"]


def test_add_exact_duplicate_is_unchanged_and_distinct_entries_stack(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("facts", "周五 15:00 与设计团队评审")
    assert memory.add("facts", "  周五 15:00 与设计团队评审 ").action == "unchanged"
    assert memory.add("facts", "prefers long answers").action == "added"
    assert memory.add("facts", "下周一发布 v2").action == "added"
    assert len(memory.read().sections["facts"]) == 3


def test_an_entry_reads_back_exactly_or_is_refused_with_the_reason(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    for entry in ["团队:  AI 平台", "-> keep  two spaces", "§5 of the contract applies"]:
        assert memory.add("facts", entry).new == entry
    assert memory.read().sections["facts"] == [
        "团队:  AI 平台", "-> keep  two spaces", "§5 of the contract applies",
    ]  # fmt: skip
    before = memory.path.read_bytes()
    with pytest.raises(InputError, match="one line") as broken:
        memory.add("identity", "团队:\nAI 平台\r\n")
    assert "one add per line" in str(broken.value)
    with pytest.raises(InputError, match="section title"):
        memory.add("facts", "# not a title")
    assert memory.path.read_bytes() == before, "nothing changed silently"
    with pytest.raises(InputError, match="non-empty"):
        memory.add("facts", "  \n ")
    with pytest.raises(InputError, match="identity, project, preferences, facts"):
        memory.add("hobbies", "chess")


def test_replace_and_remove_by_substring(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("project", "项目代号: 数字员工平台")
    memory.add("project", "deadline: 2026-12-15")
    change = memory.replace("project", "数字员工", "项目代号: Staffroom")
    assert change == MemoryChange(
        "replaced", "project", "项目代号: 数字员工平台", "项目代号: Staffroom"
    )
    assert memory.remove("project", "DEADLINE").old == "deadline: 2026-12-15"
    assert memory.read().sections["project"] == ["项目代号: Staffroom"]


def test_replace_into_an_existing_entry_merges_the_two(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("facts", "周五 15:00 与设计团队评审")
    memory.add("facts", "设计评审")
    assert memory.replace("facts", "设计评审", "周五 15:00 与设计团队评审").action == "replaced"
    assert memory.read().sections["facts"] == ["周五 15:00 与设计团队评审"]


def test_replace_finds_the_most_similar_entry(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("preferences", "prefers short answers in bullet points")
    memory.add("preferences", "偏好语言: 中文")
    change = memory.replace("preferences", "prefers short bullet answers", "prefers tables")
    assert change.old == "prefers short answers in bullet points"


def test_replace_or_remove_of_nothing_lists_the_entries(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("identity", "姓名: alice")
    memory.add("identity", "团队: AI 平台")
    with pytest.raises(InputError) as caught:
        memory.remove("identity", "favourite colour")
    assert "no entry in identity matches 'favourite colour'" in str(caught.value)
    assert "  - 姓名: alice\n  - 团队: AI 平台" in str(caught.value)
    with pytest.raises(InputError, match="section is empty"):
        memory.replace("facts", "anything", "new")


def test_ambiguous_substring_is_refused(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("facts", "周五 15:00 设计评审")
    memory.add("facts", "周一 09:00 发布会")
    with pytest.raises(InputError, match="matches 2 entries"):
        memory.remove("facts", "00")


def test_cap_refusal_leaves_the_file_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    memory = MemoryFile(path, cap=300)
    memory.add("identity", "姓名: alice")
    memory.add("project", "项目背景: " + "这是一个很长的项目描述" * 8)
    memory.add("facts", "design review on Friday")
    before = path.read_bytes()
    with pytest.raises(MemoryCapExceeded) as caught:
        memory.add("facts", "a brand new fact that is much too long to fit " * 3)
    assert path.read_bytes() == before
    message = str(caught.value)
    assert f"it is {len(before.decode())} now" in message
    assert "cap of 300" in message
    assert "Nothing was written" in message
    assert "`replace`" in message and "`remove`" in message
    assert "Largest section: project" in message
    assert "[project] '项目背景: 这是一个很长" in message
    # shrinking is still allowed at the cap
    assert memory.remove("project", "项目背景").action == "removed"


def test_change_that_does_not_grow_an_over_cap_file_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(CHINESE, encoding="utf-8")
    memory = MemoryFile(path, cap=50)
    assert memory.replace("identity", "团队", "团队: AI").action == "replaced"
    with pytest.raises(MemoryCapExceeded):
        memory.add("facts", "something new")


def test_lenient_read_of_a_hand_edited_file(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(
        b"stray note before any title\r\n"  # 1
        b"# \xe7\x94\xa8\xe6\x88\xb7\xe8\xba\xab\xe4\xbb\xbd\r\n"  # 2  # 用户身份
        b"name: alice\r\n"  # 3
        b"\r\n"  # 4
        b"# Hobbies\r\n"  # 5  (unknown title, and no separator before it)
        b"chess \xff\xfe player\r\n"  # 6  (invalid UTF-8)
        b"\xc2\xa7\r\n"  # 7  (the separator)
        b"## preferences\r\n"  # 8
        b"prefers short answers\r\n"  # 9
    )
    doc = MemoryFile(path).read()
    assert doc.sections == {
        "identity": ["name: alice"],
        "project": [],
        "preferences": ["prefers short answers"],
        "facts": ["stray note before any title", "chess \ufffd\ufffd player"],
    }
    for expected in [
        "line 1: Windows line endings",
        "line 1: entry outside any section",
        "line 4: blank line",
        "line 5: missing '§'",
        "line 5: unknown section title 'Hobbies'",
        "line 6: invalid UTF-8",
        "line 8: title 'preferences' read as preferences",
    ]:
        assert any(expected in warning for warning in doc.warnings), expected
    # A write would lose the bytes that are not UTF-8: refused, the file left as it is.
    raw = path.read_bytes()
    with pytest.raises(InputError, match="not UTF-8"):
        MemoryFile(path).add("project", "code name: staffroom")
    assert path.read_bytes() == raw
    # Once they are fixed, the next write stores the cleaned-up form.
    path.write_bytes(raw.replace(b"\xff\xfe", b""))
    MemoryFile(path).add("project", "code name: staffroom")
    assert MemoryFile(path).read().warnings == []


def test_writes_create_folders_and_leave_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "pm" / "alice" / "MEMORY.md"
    memory = MemoryFile(path)
    memory.add("identity", "姓名: alice")
    memory.remove("identity", "alice")
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["MEMORY.md", "MEMORY.md.lock", "facts.json"]
    assert memory.read().sections["identity"] == []


def test_similarity_is_pluggable(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md", similarity=lambda a, b: 1.0)
    memory.add("facts", "one")
    assert memory.add("facts", "two").action == "replaced"
