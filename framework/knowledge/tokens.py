"""Words for the search index: Chinese segmented by jieba, English lower-cased, stop words out.

The same :func:`tokenize` runs when a document is indexed and when a query is asked, so a
word matches itself whatever text surrounds it. Rules, in order:

1. NFKC (full-width ``ＡＰＩ`` and ``１２`` become ``API`` and ``12``), then lower case.
2. The text is cut into runs at script boundaries: a run of Han characters, or a run of other
   letters and digits (``部署k8s集群`` -> ``部署`` / ``k8s`` / ``集群``). Everything else
   (punctuation, symbols, whitespace, ``_``) only separates.
3. A Han run is segmented with jieba's search mode (``cut_for_search``): the words of the best
   dictionary route, plus the dictionary words inside a long word, so ``自动部署`` and ``部署``
   share ``部署``. jieba's HMM guesser is off: it groups unknown characters by context
   (``先回滚再说`` -> ``先回`` / ``滚``, but ``回滚`` -> ``回滚``), and the same word must
   come out the same in a document and in a query. Unknown words become single characters,
   which still match.
4. Stop words (Chinese and English function words) and tokens longer than
   :data:`MAX_TOKEN_CHARS` (hashes, base64) are dropped.

Every token is made of letters and digits only, so a space-joined token string goes through
SQLite FTS5's ``ascii`` tokenizer unchanged (``index.py`` relies on this).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from importlib.metadata import version
from typing import Any

__all__ = ["MAX_TOKEN_CHARS", "STOP_WORDS", "snippet", "tokenize", "tokenizer_version"]

RULES_VERSION = "2"
"""Bump when a rule here changes: indexes built with other rules are rebuilt on open.
2: front matter is no longer indexed (``documents.index_tokens``)."""

MAX_TOKEN_CHARS = 64
"""Longer runs are ids, hashes or encoded data, not words anyone searches for."""
SNIPPET_CHARS = 160

# Han: CJK unified ideographs with extension A, compatibility ideographs, the supplementary
# planes. Kana and Hangul are not here: jieba does not segment them, so they are kept as runs.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"([{_HAN}]+)|[^\W_{_HAN}]+")

_ZH_STOP = """
的 地 得 了 着 过 和 与 及 或 而 且 并 也 又 还 就 都 才 只 把 被 让 给 对 从 向 在 于 以 为
由 之 其 此 这 那 哪 是 不 没 很 太 吗 呢 吧 啊 呀 嘛 么 个 些 我 你 他 她 它 您 咱 谁
我们 你们 他们 她们 它们 咱们 自己 这个 那个 这些 那些 这样 那样 这里 那里 什么 怎么
怎样 如何 为什么 哪些 哪个 一个 一些 一下 一种 已经 可以 能够 应该 需要 因为 所以 但是
然后 而且 或者 还是 就是 如果 虽然 不是 没有 有 要 会 能 将 等 等等 以及 关于 对于 吗
"""
_EN_STOP = """
a an the and or nor but if then else so of to in on at by for from with about into onto
over under than as is are was were be been being am do does did doing have has had having
it its this that these those there here i me my we us our you your he him his she her
they them their what which who whom whose when where why how not no yes can could will
would shall should may might must just also too very all any some such own same other
"""
STOP_WORDS: frozenset[str] = frozenset((_ZH_STOP + _EN_STOP).split())
"""Dropped at index and query time: words too frequent to tell documents apart."""


@cache
def _jieba() -> Any:
    """jieba's segmenter, imported and loaded once (about a second), on first use.

    A private ``jieba.Tokenizer`` rather than the module's shared one: words another library
    adds to jieba's global dictionary must not change how our index segments.
    """
    import jieba

    # jieba logs "Building prefix dict ..." at DEBUG to its own stderr handler while it loads;
    # its import sets that level, so it is lowered after the import and before the load.
    logging.getLogger("jieba").setLevel(logging.WARNING)
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    return segmenter


def tokenizer_version() -> str:
    """Our rules plus jieba's version: a change in either re-segments every document."""
    return f"staffroom-{RULES_VERSION}+jieba-{version('jieba')}"


def tokenize(text: str) -> list[str]:
    """The searchable words of ``text``, in order, duplicates kept (BM25 counts them).

    >>> tokenize("如何部署k8s集群? Deploy the API!")
    ['部署', 'k8s', '集群', 'deploy', 'api']
    """
    words: list[str] = []
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = match.group(0)
        if match.group(1) is None:
            words.append(run)
        else:
            words.extend(_jieba().cut_for_search(run, HMM=False))
    return [w for w in words if w not in STOP_WORDS and len(w) <= MAX_TOKEN_CHARS]


def snippet(text: str, words: Sequence[str]) -> str:
    """About :data:`SNIPPET_CHARS` characters of ``text`` (whitespace collapsed), starting a
    little before the first of ``words`` found in it, or at its start."""
    flat = " ".join(text.split())
    found = [i for i in (flat.lower().find(w) for w in words) if i >= 0]
    start = max(0, min(found, default=0) - SNIPPET_CHARS // 4)
    end = start + SNIPPET_CHARS
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
