"""The index's words: jieba for Chinese, lower-cased English, script boundaries, stop words."""

from __future__ import annotations

import re
import subprocess
import sys

from paths import ROOT

from framework.knowledge.tokens import (
    MAX_TOKEN_CHARS,
    SNIPPET_CHARS,
    STOP_WORDS,
    snippet,
    tokenize,
    tokenizer_version,
)


def test_mixed_scripts_split_at_their_boundaries() -> None:
    assert tokenize("部署k8s集群") == ["部署", "k8s", "集群"]
    assert tokenize("用Redis做缓存") == ["用", "redis", "做", "缓存"]


def test_a_two_character_word_is_found_inside_longer_words() -> None:
    # Search mode adds the dictionary words inside a long word, at index and query time alike.
    assert "部署" in tokenize("自动部署方案")
    assert {"数据", "数据库"} <= set(tokenize("数据库迁移"))
    assert tokenize("部署") == ["部署"]


def test_english_is_lower_cased_and_punctuation_only_separates() -> None:
    assert tokenize("Deploy the API, then ROLLBACK!") == ["deploy", "api", "rollback"]
    assert tokenize("snake_case v1.2 C++ user@example.com") == [
        *("snake", "case", "v1", "2", "c", "user", "example", "com")
    ]
    assert tokenize("“引号”、《书名》——注释…") == ["引号", "书名", "注释"]


def test_full_width_forms_become_ascii() -> None:
    assert tokenize("ＡＰＩ网关 ２０２４") == ["api", "网关", "2024"]


def test_stop_words_are_dropped_in_both_languages() -> None:
    assert tokenize("我们的方案是什么") == ["方案"]
    assert tokenize("what is the plan for this") == ["plan"]
    assert tokenize("的 了 和 the a of") == []
    assert {"的", "the", "如何"} <= STOP_WORDS


def test_very_long_runs_are_not_words() -> None:
    blob = "a" * (MAX_TOKEN_CHARS + 1)
    assert tokenize(f"hash {blob} 部署") == ["hash", "部署"]
    assert tokenize("b" * MAX_TOKEN_CHARS) == ["b" * MAX_TOKEN_CHARS]


def test_segmentation_ignores_context_for_unknown_words() -> None:
    # jieba's HMM would group unknown characters by their neighbours; with it off, the same
    # characters come out the same in a document and in a query.
    alone = tokenize("回滚")
    for text in ("先回滚再说", "上线前要准备回滚", "回滚预案"):
        assert set(alone) <= set(tokenize(text)), text


def test_tokens_survive_fts5_ascii_tokenizer() -> None:
    # Letters and digits only: FTS5's ascii tokenizer splits on ASCII punctuation and spaces.
    text = "Hello, 世界! naïve café — x_y/z.md 第3版 ｆｕｌｌ"
    for token in tokenize(text):
        assert token and not re.search(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]", token), token


def test_the_same_text_gives_the_same_words() -> None:
    text = "灰度发布时监控告警阈值调整, rollback plan v2"
    assert tokenize(text) == tokenize(text)
    assert "jieba-" in tokenizer_version()


def test_loading_jieba_prints_nothing() -> None:
    code = "from framework.knowledge.tokens import tokenize; print(tokenize('部署集群'))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['部署', '集群']"
    assert done.stderr == ""


def test_snippet_starts_near_the_first_word_found() -> None:
    text = "开头" * 200 + "这里讲部署步骤" + "结尾" * 200
    piece = snippet(text, ["部署"])
    assert "部署" in piece and piece.startswith("…") and piece.endswith("…")
    assert len(piece) <= SNIPPET_CHARS + 2
    assert snippet("Short   text\n\nhere", ["missing"]) == "Short text here"
