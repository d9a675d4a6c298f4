"""Default similarity for MEMORY.md entries: Chinese, English and mixed text."""

from __future__ import annotations

import pytest

from framework.memory.similarity import (
    entry_key,
    normalize,
    normalized_similarity,
    same_key,
    tokens,
)


def test_tokens_split_cjk_per_character_and_latin_per_word() -> None:
    assert tokens("语言：English，Py3 好！") == ["语", "言", "english", "py3", "好"]
    assert normalize("  Prefers   SHORT answers. ") == "prefers short answers"
    assert normalize("ＡＢＣ　１２３") == "abc 123"  # full-width letters, digits and space


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("prefers short answers", "Prefers short answers."),
        ("偏好语言：中文", "偏好语言: 中文"),
        ("项目代号「数字员工平台」", "项目代号 数字员工平台"),
        ("偏好语言: English", "偏好语言：ENGLISH。"),
    ],
)
def test_same_text_modulo_case_punctuation_and_width_is_identical(a: str, b: str) -> None:
    assert normalized_similarity(a, b) == 1.0


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ("周五 15:00 与设计团队评审", "周五 16:00 与设计团队评审", 0.8, 0.99),
        ("偏好语言: 中文", "偏好语言: 英文", 0.8, 0.9),
        ("prefers short answers", "prefers long answers", 0.5, 0.8),
        ("偏好语言: 中文", "偏好语言: English", 0.6, 0.8),
        ("团队: AI 平台", "team: AI platform", 0.2, 0.5),
        ("姓名: alice", "项目代号: 数字员工平台", 0.0, 0.2),
        ("likes tea", "周五评审", 0.0, 0.0),
    ],
)
def test_similarity_ranges(a: str, b: str, low: float, high: float) -> None:
    score = normalized_similarity(a, b)
    assert low <= score <= high
    assert normalized_similarity(b, a) == pytest.approx(score)


def test_same_key_across_colon_styles_and_values() -> None:
    assert same_key("偏好语言: 中文", "偏好语言：English")
    assert same_key("Reply language: Chinese", "reply language:English")
    assert not same_key("偏好语言: 中文", "输出格式: 中文")
    assert not same_key("no key here", "no key here")
    # a time or a URL is not a key
    assert entry_key("周五 15:00 与设计团队评审") is None
    assert entry_key("https://example.com/a") is None
    assert entry_key("偏好语言：中文") == "偏 好 语 言"
