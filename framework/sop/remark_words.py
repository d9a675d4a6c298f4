"""Which of a person's messages may correct a run's steps: the remark reader's candidate rule.

Only a candidate costs a model call (and, read as a correction, a line in the room), so the
rule must pass ordinary team chat by ("Continue please.", "The reply is fine, send it.") and
still catch corrections in free words. It reads *words*, never substrings ("Continue" holds
"in", a step's word): English by word tokens, Chinese by jieba's words (HMM off, as the
search index; a lone character is also read joined to its neighbour, "跳"+"过"), stop words
of both languages out. A message is a candidate when it has

- a strong cue (:data:`STRONG_CUES`: swap, missing, forgot, remove, redundant, instead, "no
  need", 顺序, 漏, 多余, 去掉, 改成, 先…再…) and any reference to the steps, or
- a weak cue (:data:`WEAK_CUES`: before, after, first, should, add, order, 之前, 先, 加…:
  everyday chat is full of them) and a clear reference: a step named or two of the steps'
  words.

A reference is a step's number or place ("step 2", "the last two steps", "第三步", "三、四
两步"), a word for steps (step, process, 步骤, 环节, 流程), or content words of the steps'
texts or speakers (English words compared by their first :data:`STEM` letters, so
"reproducing" meets "Reproduce"), of which one must name what a step does
(:func:`anchors`: "the review", "reproducing", "diagnosis.md"; "the ticket" or "the
customer" alone is what every message in the room is about). An English change word in a
report of a deed ("I removed the duplicate ticket", "the customer forgot the logs") is only
a weak cue: a correction asks what should be done ("remove it", "is redundant").

Measured on ``benchmarks/remark_corpus.jsonl`` by ``benchmarks/remark_reader.py``.
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from framework.sop.model import Step

STEM = 5
"""English words of this length or longer are compared by their first ``STEM`` letters."""

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"([{_HAN}]+)|[a-z0-9]+(?:'[a-z]+)?")

_STOP = """
    a an the and or nor but if so of to in on at by for from with about into onto over under
    than as is are was were be been being am do does did doing have has had having it its
    it's this that these those there here i i'm i'll i'd me my we we're we'll us our you
    you're your he him his she her they they're them their what which who whom whose when
    where why how not yes can could will would shall may might must just too very all any
    some such own same other each every both since let let's please ok okay thanks thank hi hey
    one time
    的 地 得 了 着 过 和 与 及 或 而 且 并 也 又 还 就 都 才 只 把 被 给 对 从 向 在 于 以 为
    由 之 其 此 这 那 哪 是 很 太 吗 呢 吧 啊 呀 嘛 么 个 些 我 你 他 她 它 您 咱 谁 我们 你们
    他们 咱们 自己 这个 那个 这些 那些 这样 那样 这里 那里 什么 怎么 怎样 如何 一个 一些 一下
    一种 已经 可以 能够 因为 所以 但是 而且 或者 还是 就是 如果 虽然 有 会 能 将 等 以及 关于
    对于 写入 每节 written
    """
STOP_WORDS = frozenset(_STOP.split())
"""Function words of both languages (and the steps' boilerplate, "written to"/"写入"):
never a reference to a step, whatever a step's text says."""

_STRONG = """
    swap flip reverse backwards precede earlier ahead move
    missing forgot forget forgotten skipped gap nobody
    remove drop delete cut redundant unnecessary superfluous pointless needed rid lose skip
    overhead waste instead reword rename
    应该 应当 漏 漏掉 漏了 缺 缺少 缺了 少 少了 多余 不用 没必要 不要 去掉 删 删掉 删除 删了 省
    省掉 省略 跳过 砍掉 砍 顺序 提前 挪 挪到 移到 改成 改为 换成 对调 颠倒 反了 调整 增加 补 添加
    重复 浪费 前面 后面 最前面
    """
STRONG_CUES = frozenset(_STRONG.split())
"""Words that ask for a change of the steps on their own: of order, a missing or extra step,
a step's text ("swap", "missing", "redundant", "reword", 对调, 漏, 多余, 改成)."""

STRONG_PAIRS = frozenset(
    {"no need", "don't need", "doesn't need", "not needed", "isn't needed", "take out", "get rid"}
)
"""Two English words that ask for a change together (each alone is everyday chat)."""

ORDER_PAIRS = (("先", "再"), ("先", "后"), ("先", "然后"))
"""Chinese order words that ask for an order together ("先出配图再写正文")."""

_WEAK = """
    before after first then later last start until put end add include also need should order
    shouldn't go take say update make only edit change
    要 需要 先 再 前 后 之前 之后 最后 放到 放在 排在 改 换 加 加上
    """
WEAK_CUES = frozenset(_WEAK.split())
"""Words that ask for a change only together with a clear reference to the steps ("first",
"should", "add", 先, 之前, 加): everyday chat is full of them ("Coffee first, then I'll
review.", "正文之前的引言写得很好")."""

_NOUNS = "step steps process sop stage procedure 步 步骤 环节 流程 这步 那步 这一步 那一步"
STEP_NOUNS = frozenset(_NOUNS.split())
"""Words for the steps themselves."""

_NUMERAL = r"(?:\d+|[一二两三四五六七八九十]+)"
_EN_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|last|final)"
STEP_NUMBER = re.compile(
    rf"第\s*{_NUMERAL}\s*步|步骤\s*{_NUMERAL}"
    rf"|(?<![下进逐同初])(?<!一)(?<!一步){_NUMERAL}(?:\s*[、,，和与]\s*{_NUMERAL})*\s*两?步(?!一步)"
    rf"|\bsteps?\s*#?\s*(?:\d+|one|two|three|four|five|six)\b"
    rf"|\b{_EN_ORDINAL}(?:\s+(?:and|two|three|&)\s+{_EN_ORDINAL})?\s+(?:two\s+)?steps?\b",
    re.IGNORECASE,
)
"""A step named by its number or place ("step 2", "the last two steps", "第三步", "三、四两步";
not 下一步, 进一步, 一步一步: "next", "further", "step by step")."""


@cache
def _jieba() -> Any:
    """A private jieba segmenter (words others add to jieba's global one change nothing here),
    loaded once on first use."""
    import jieba

    logging.getLogger("jieba").setLevel(logging.WARNING)  # no "Building prefix dict" lines
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    return segmenter


def words(text: str) -> list[str]:
    """The words of ``text``: NFKC, lower case, Chinese by jieba, stop words kept (the rule
    drops them where they must not count)."""
    found: list[str] = []
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text).lower()):
        if match.group(1) is None:
            found.append(match.group(0))
        else:
            found.extend(_jieba().lcut(match.group(1), HMM=False))
    return found


def _stem(word: str) -> str:
    return word[:STEM] if word.isascii() and len(word) >= STEM else word


def _forms(word: str) -> set[str]:
    """``word`` and, for English, the word without a plain inflection ("drops", "dropped",
    "dropping" meet "drop"), so a cue is met in any of its everyday forms."""
    if not word.isascii():
        return {word}
    forms = {word}
    for ending in ("ing", "ed", "es", "s", "d"):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            stem = word[: -len(ending)]
            forms |= {stem, stem[:-1]} if stem[-1:] == stem[-2:-1] else {stem}
    return forms


def _joined(said: list[str], *, stop: bool = True) -> list[str]:
    """The words, plus each Chinese single character joined to its neighbour: jieba without
    its guesser cuts a word it does not know into characters ("跳过" -> "跳"/"过"). With
    ``stop=False`` no stop word is joined ("我们"+"的" names nothing)."""
    pairs = [
        a + b
        for a, b in itertools.pairwise(said)
        if not (a + b).isascii()
        and (len(a) == 1 or len(b) == 1)
        and (stop or (a not in STOP_WORDS and b not in STOP_WORDS))
    ]
    return said + pairs


_COUNTED = re.compile(r"^[一二两三四五六七八九十几每]")
"""A numeral and its measure word ("一张", "两个", "每节") counts things; it names no step."""


def _content(items: Iterable[str]) -> set[str]:
    """Stems of the words that can name a step: no stop word, number, counted amount, lone
    Chinese character or short English token ("md" of ``outline.md``)."""
    return {
        _stem(w)
        for w in items
        if w not in STOP_WORDS
        and not w.isdigit()
        and not (w.isascii() and len(w) < 3)
        and not (not w.isascii() and len(w) < 2)
        and not _COUNTED.match(w)
    }


@cache
def _step_words(steps: tuple[Step, ...]) -> frozenset[str]:
    texts = [s.do for s in steps] + [p for s in steps for p in s.speakers]
    return frozenset(
        w for t in texts for w in _content(_joined(words(t.replace("_", " ")), stop=False))
    )


_LIGHTS = "run hold do make take have give get carry perform conduct prepare send"
_LIGHT = frozenset(_LIGHTS.split())
"""Verbs that leave the work to their object ("Run the technical interview", "Hold the
culture interview"): the object's words anchor the step too."""

_CLAUSE = re.compile(r"[:;,.()]|\b(?:and|then)\b")
"""Where a clause of an English step's text starts: a colon, comma, bracket, "and", "then"."""

_FILE = re.compile(r"([a-z][a-z0-9_-]*)\.[a-z0-9]{1,5}\b")
"""A file name; its stem names the step's product ("diagnosis.md")."""


def _verbs(clause: str) -> list[str]:
    """The clause's verb if it opens on one, told by the function word after it ("find its
    cause", "agree on the fix"; not "customer impact"), with a light verb's object."""
    said = clause.split()
    if len(said) < 2 or said[1] not in STOP_WORDS:
        return []
    if said[0] not in _LIGHT:
        return [said[0]]
    return [said[0], *itertools.takewhile(lambda w: w not in STOP_WORDS, said[2:])]


@cache
def _anchors(steps: tuple[Step, ...]) -> frozenset[str]:
    found: set[str] = set()
    for step in steps:
        text = unicodedata.normalize("NFKC", step.do).lower()
        lead = re.match(r"\W*([a-z]+)", text)  # an English step opens on its verb
        named = [lead.group(1)] if lead else []
        named += [w for clause in _CLAUSE.split(text) for w in _verbs(clause)]
        named += [m.group(1) for f in (text, *step.produces) for m in _FILE.finditer(f.lower())]
        found |= _content(named)
        found |= {w for w in _content(_joined(words(text), stop=False)) if not w.isascii()}
    return frozenset(found)


def anchors(steps: Sequence[Step]) -> frozenset[str]:
    """The words that name what a step does (stemmed as :func:`step_words`).

    English: the step's verbs ("Triage", "Reproduce", "agree on"), a light verb's object
    ("Run the technical interview") and its products' names ("diagnosis.md"); not the
    things and people it handles ("the ticket", "the customer"), which ordinary chat names
    all day. Chinese: every content word (a Chinese step is a titled noun phrase, 配图方案).
    """
    return _anchors(tuple(steps))


def anchored(text: str, steps: Sequence[Step]) -> bool:
    """Whether ``text`` uses a word of :func:`anchors`."""
    return not _content(_joined(words(text), stop=False)).isdisjoint(anchors(steps))


def step_words(steps: Sequence[Step]) -> frozenset[str]:
    """The content words of the steps' texts and speakers (English ones stemmed)."""
    return _step_words(tuple(steps))


_DONE = frozenset({"forgot", "forgotten"})
"""Irregular past forms of change words; regular ones end in "-ed"."""

_PASSIVES = """
    is are was were be been being get gets got getting isn't aren't wasn't weren't not never
    """
_PASSIVE = frozenset(_PASSIVES.split())
"""Words just before a past form that make it a state, not a deed: "the review is not
needed", "step 3 can be dropped", "it keeps getting skipped"."""


def _reported(word: str, before: Sequence[str]) -> bool:
    """Whether ``word`` tells what someone did ("I removed the duplicate ticket", "the
    customer forgot the logs"): a past form, not in the passive (``before``: the two words
    before it). A deed reported asks nothing of the steps; a correction asks what should be
    done ("remove it", "is redundant", "should be dropped")."""
    past = word in _DONE or (word.endswith("ed") and len(word) > 4)
    return past and _PASSIVE.isdisjoint(before)


def cue(text: str) -> int:
    """How strongly ``text`` asks for a change: 2 (a strong cue), 1 (only weak ones) or 0.
    A strong word in a report of what someone did ("I removed…", "we forgot…") is weak."""
    said = _joined(words(text))
    forms = {f for w in said for f in _forms(w)}
    latin = [w for w in said if w.isascii()]
    asked = {
        f
        for i, w in enumerate(latin)
        if not _reported(w, latin[max(0, i - 2) : i])
        for f in _forms(w)
    }
    strong = {f for w in said if not w.isascii() for f in _forms(w)} | asked
    pairs = {f"{a} {b}" for a, b in itertools.pairwise(latin)}
    if not (STRONG_CUES.isdisjoint(strong) and STRONG_PAIRS.isdisjoint(pairs)):
        return 2
    if any(a in said and b in said for a, b in ORDER_PAIRS):
        return 2
    return 1 if not (WEAK_CUES.isdisjoint(forms) and STRONG_CUES.isdisjoint(forms)) else 0


def names_a_step(text: str) -> bool:
    """Whether ``text`` names a step by number or place, or says "step" (步骤, 流程…)."""
    if STEP_NUMBER.search(unicodedata.normalize("NFKC", text)):
        return True
    return not STEP_NOUNS.isdisjoint(_joined(words(text)))


def shared_words(text: str, steps: Sequence[Step]) -> int:
    """How many content words of the steps' texts and speakers ``text`` uses."""
    return len(_content(_joined(words(text), stop=False)) & step_words(steps))


def refers_to_steps(text: str, steps: Sequence[Step]) -> bool:
    """Whether ``text`` refers to the steps at all: names one, or uses a step's word."""
    return names_a_step(text) or shared_words(text, steps) > 0


def may_correct(text: str, steps: Sequence[Step]) -> bool:
    """The rule: a strong cue and any reference to the steps, or a weak cue and a clear one
    (a step named, or two content words of the steps)."""
    strength = cue(text) if steps else 0
    if not strength:
        return False
    if names_a_step(text):
        return True
    # the shared words must name what a step does: "the ticket" or "the customer" alone is
    # what every message of an escalation room is about
    return anchored(text, steps) and shared_words(text, steps) >= (1 if strength == 2 else 2)
