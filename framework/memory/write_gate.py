"""The write gate: what may become a MEMORY.md entry, decided in one place for every writer.

The memory tool (a model saving what it learned), consolidation (a model's summary or the
offline rules) and the statement rule all ask :func:`judge` before they add an entry, and
each refusal is shown as a ``fallback`` event by the caller. Refused:

* placeholders a weak model echoed from a prompt (``key: text``, ``<value>``, ``{name}``);
* timestamps as values (``2026-12-02 12.03.26``, ``date: 2026-12-02``) and text without
  words;
* machine text: boot and status logs, heartbeats and cron reports, tracebacks, JSON bodies;
* content-free text (``Acknowledged. OK.``, ``收到``);
* with a transcript (``heard``): a claim whose words nobody in the session said, such as a
  profile a model invented. It is judged on the words of the entry against what the people
  said, never on a label, and only where the two are in one language (a Chinese sentence
  cannot be word-matched against an English entry).

The rules are plain text rules, with no model: each pattern below is text a person would not
state as a lasting fact about themselves or their work. ``benchmarks/memtrust_eval.py`` measures
them on a third party's fixtures.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from framework.language import is_english
from framework.memory.similarity import tokens
from framework.phrases import Phrase

__all__ = ["Refusal", "judge", "judge_history_line"]

PLACEHOLDER = Phrase(
    en="it is a placeholder copied from a prompt ({text}), not a fact",
    zh="这是从提示里照抄的占位符（{text}），不是事实",
)
TIMESTAMP = Phrase(
    en="its value is a timestamp or has no words ({text}), not a fact",
    zh="它的值是时间戳或没有文字（{text}），不是事实",
)
MACHINE = Phrase(
    en="it is machine output ({what}), not something a person stated",
    zh="这是机器输出（{what}），不是人说过的事",
)
CONTENT_FREE = Phrase(
    en="it says nothing lasting ({text})",
    zh="它没有说任何持久的事（{text}）",
)
UNSTATED = Phrase(
    en="nobody in this session said it (unmatched words: {words})",
    zh="本次会话里没有人说过（对不上的词：{words}）",
)
LOG = Phrase(
    en="a status or boot log",
    zh="状态或启动日志",
)
HEARTBEAT = Phrase(
    en="a heartbeat or scheduled-job report",
    zh="心跳或定时任务报告",
)
TRACEBACK = Phrase(
    en="a traceback",
    zh="异常堆栈",
)
JSON_BODY = Phrase(
    en="a JSON body",
    zh="JSON 数据",
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an entry is not stored: the rule that refused it and the reason, for people."""

    rule: str
    """``placeholder``, ``timestamp``, ``log``, ``heartbeat``, ``traceback``, ``json``,
    ``content_free`` or ``unstated``."""
    reason: str


_PLACEHOLDER_WORDS = frozenset(
    """key value text entry fact name content item field label foo bar baz xxx tbd todo
    placeholder example sample string something 键 值 内容 示例 事实 名称 条目 文本""".split()  # noqa: SIM905 (a word list reads better so)
)
_BRACKETED = re.compile(r"<[^<>\n]{1,40}>|\{\{?[^{}\n]{0,40}\}?\}|\[[A-Z_ ]{2,30}\]")
_CLOCK = re.compile(r"\b\d{1,2}[:.]\d{2}[:.]\d{2}\b")
_DATE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}[:.]\d{2}(?:[:.]\d{2})?\S*)?")
_TIME_KEYS = frozenset(
    ["date", "time", "timestamp", "datetime", "day", "when", "日期", "时间", "时间戳"]
)
_WORD = re.compile(r"[^\W\d_]", re.UNICODE)

_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)|\bFile \"[^\"]+\", line \d+|"
    r"^\s*at [\w.$<>]+\([\w.]+:\d+\)|\bpanic: |\bgoroutine \d+ \[",
    re.MULTILINE,
)
_LOG_LINE = re.compile(
    r"^\s*\[?\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[T ]\d{1,2}[:.]\d{2}(?:[:.]\d{2})?\S*\]?\s+"
    r"\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b",
    re.IGNORECASE | re.MULTILINE,
)
"""A log line: a timestamp, then a level."""
_JSON_PAIRS = re.compile(r"\"[\w-]+\"\s*:")
# Groups of machine-status vocabulary: a person's lasting fact may use a word or two of
# them ("our backend config lives in config.yaml"), a log stacks them.
_LOG_GROUPS = (
    re.compile(
        r"\b(?:loaded|initiali[sz](?:ed|ing)|restored|reconnected|connected to|validated|"
        r"detected|registered|warm|unchanged since)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:boot(?: sequence)?|start-?up|session start|system prompt|config(?: drift)?|"
        r"schema|cache|migrations?|subagents?|mcp servers?|tokens|backend|vector store|"
        r"environment variables|working directory|git branch|tool definitions|hash)\b",
        re.I,
    ),
    re.compile(
        r"\b\w+=\S+|(?:~|/home|/usr|/etc|/var|/tmp)/\S*|\b[\w-]+\.(?:md|py|json|ya?ml|log|sh)\b|"
        r"\blocalhost:\d+|\b\d{1,3}(?:\.\d{1,3}){3}\b|^\s*\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|"
        r"TRACE)\]?\b",
        re.I | re.MULTILINE,
    ),
)
_HEARTBEAT = re.compile(
    r"\b(?:heartbeat|uptime|cpu|nominal|cron(?: job)?|ping|pong|connection alive|"
    r"no new events|next run|completed successfully|no action required|\d+ errors?|"
    r"\d+ warnings?|health ?check)\b|心跳|定时任务",
    re.I,
)
_ACK_PHRASES = frozenset(
    [
        "ok", "okay", "acknowledged", "noted", "got it", "thanks", "thank you", "received",
        "message received", "message received and processed", "done", "sure", "yes", "no",
        "fine", "alright", "roger", "copy that", "ping", "pong", "connection alive",
        "no new events", "understood", "will do", "no action required", "all good",
        "好", "好的", "收到", "明白", "谢谢", "嗯", "知道了", "了解", "没问题", "行", "ok了",
    ]
)  # fmt: skip
_ACK_KEYS = frozenset(" ".join(tokens(p)) for p in _ACK_PHRASES)
_SENTENCES = re.compile(r"[.!?。！？;；,，、\n]+")
_STOP = frozenset(
    """a an the is are was were be been being am to of in on at by for from with and or but
    so that this these those it its as into than then there their they them he she his her
    i me my we our you your user users user's users' has have had do does did not no will
    would should can could may might must also just very now new prefers prefer likes like
    wants want person people about after before over under up out more most some any all
    who whom which what when where why how because while if each every only own same""".split()  # noqa: SIM905 (a word list reads better so)
)

_ZH_STOP = re.compile(
    "用户|喜欢|偏好|希望|习惯|倾向|觉得|认为|现在|以后|总是|一些|一下|他们|她们|我们|"
    "[的了是在他她我你要得地和与也都就很请把被对给说会]"
)
"""Words a paraphrase adds in Chinese (who, likes, wants, particles): not the claim's content."""


def judge(
    entry: str, *, heard: Callable[[], str] | str | None = None, language: str = "en"
) -> Refusal | None:
    """Why ``entry`` must not be stored, or None when it may be.

    ``heard``: what the people in the session said (or a function that reads it, called only
    when needed); without it an entry is not judged against a transcript. ``language``: the
    language of the reason.
    """
    text = unicodedata.normalize("NFKC", entry).strip()
    shown = text if len(text) <= 60 else text[:59] + "…"
    head, sep, value = _split(text)
    if _BRACKETED.search(text) or _placeholder(head, value if sep else ""):
        return Refusal("placeholder", PLACEHOLDER(language, text=shown))
    if _timestamp(head, value if sep else text):
        return Refusal("timestamp", TIMESTAMP(language, text=shown))
    if what := _machine(text):
        rule, phrase = what
        return Refusal(rule, MACHINE(language, what=phrase(language)))
    if _content_free(text):
        return Refusal("content_free", CONTENT_FREE(language, text=shown))
    if heard is not None:
        said = heard() if callable(heard) else heard
        missing = _unstated(value if sep else text, said)
        if missing:
            return Refusal("unstated", UNSTATED(language, words=", ".join(missing[:5])))
    return None


def judge_history_line(line: str, *, language: str = "en") -> Refusal | None:
    """Why a HISTORY.md line (without its date) must not be written, or None: a line of
    placeholders, a timestamp, machine output or nothing lasting tells no one anything."""
    return judge(line, language=language)


def _split(text: str) -> tuple[str, str, str]:
    head, sep, value = text.partition(":")
    if not sep:
        head, sep, value = text.partition("：")
    if sep and (head[-1:].isdigit() and value[:1].isdigit()):
        return text, "", ""  # 15:00 is a time, not a key
    return head.strip(), sep, value.strip()


def _placeholder(head: str, value: str) -> bool:
    """``key: text``, ``name: value``, ``text``, ``...``: only placeholder words."""
    words = tokens(f"{head} {value}")
    if not words:
        return False
    return all(w in _PLACEHOLDER_WORDS or w in ("…", "...") for w in words) or value in (
        "...",
        "…",
    )


def _timestamp(head: str, value: str) -> bool:
    """A value that is a date or clock only (under a time key, or with seconds), or no words."""
    if not _WORD.search(value) and not _WORD.search(head if head != value else ""):
        return True  # nothing but digits and punctuation
    rest = _DATE.sub(" ", _CLOCK.sub(" ", value))
    if _WORD.search(rest):
        return False
    if _CLOCK.search(value):
        return True  # a log stamp (12.03.26): seconds are not a fact anyone states
    return " ".join(tokens(head)) in _TIME_KEYS and bool(_DATE.search(value))


def _machine(text: str) -> tuple[str, Phrase] | None:
    if _TRACEBACK.search(text):
        return "traceback", TRACEBACK
    if _json_body(text):
        return "json", JSON_BODY
    if _LOG_LINE.search(text):
        return "log", LOG
    if len(set(m.group(0).casefold() for m in _HEARTBEAT.finditer(text))) >= 2:
        return "heartbeat", HEARTBEAT
    hits = [{m.group(0).casefold() for m in group.finditer(text)} for group in _LOG_GROUPS]
    if sum(len(h) for h in hits) >= 4 and sum(1 for h in hits if h) >= 2:
        return "log", LOG
    return None


def _json_body(text: str) -> bool:
    if text[:1] in "{[" and text[-1:] in "}]":
        try:
            json.loads(text)
        except ValueError:
            return len(_JSON_PAIRS.findall(text)) >= 2
        return True
    return len(_JSON_PAIRS.findall(text)) >= 3


def _content_free(text: str) -> bool:
    """Every sentence is an acknowledgement, a greeting or no words at all."""
    parts = [" ".join(tokens(p)) for p in _SENTENCES.split(text)]
    parts = [p for p in parts if p]
    return not parts or all(p in _ACK_KEYS for p in parts)


def _stem(word: str) -> str:
    """A crude English stem (``answers``/``answered`` -> ``answer``), enough to match a
    paraphrase's words with what was said."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _unstated(claim: str, said: str) -> list[str]:
    """The claim's content words that the transcript lacks, when they are most of them (an
    invented claim); [] when the claim is mostly said, or cannot be compared."""
    words = _content_words(claim)
    if len(words) < 2:
        return []
    if not said.strip():
        return words
    if is_english(claim) != is_english(said):
        return []
    heard = {_stem(w)[:5] for w in tokens(said)}
    missing = [w for w in words if _stem(w)[:5] not in heard]
    return missing if len(missing) * 2 > len(words) else []


def _content_words(text: str) -> list[str]:
    text = _ZH_STOP.sub(" ", text)
    words = [
        w
        for w in tokens(text)
        if w not in _STOP and not w.isdigit() and (len(w) > 1 or not w.isascii())
    ]
    return list(dict.fromkeys(words))
