"""How a person answers what the room understood of their remark, without the room waiting.

An understood remark is shown back with a name ("remark 2" / "反馈 2", numbered in its run)
and the run goes on. Its person confirms or denies it later, until the run's feedback window
closes, by a message that *refers to it*:

- a reply: the message's ``meta["reply_to"]`` (:data:`REPLY_TO`) is the id of the understood
  ``remark`` event, or of the message the remark was read from; or
- naming it: "yes, remark 2", "remark 2: no", "对，反馈 2", "第 2 条反馈不对".

Either way the rest of the message must be a plain yes or no (:func:`verdict`). A bare "yes"
refers to nothing: it was probably meant for an employee, and confirms nothing. Unconfirmed
never counts; a confirmation is the only thing that makes a remark's corrections count
(:func:`framework.sop.remarks.confirmed_corrections`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from framework.language import is_english
from framework.phrases import Phrase
from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import RemarkPayload, payload_of

_NO_REMARK = RemarkPayload(
    status=None,
    by=None,
    text=None,
    ask=None,
    english=False,
    number=None,
    understood=None,
    remark=None,
    told=None,
    corrections=None,
    raw={},
)

REPLY_TO = "reply_to"
"""Meta key of a message that answers an earlier event: that event's id."""

UNDERSTOOD = "understood"
"""The model read corrections in a remark; shown back, open for its person's yes or no."""
CONFIRMED = "confirmed"
"""The person confirmed: these corrections count in the run (the only status that counts)."""
DROPPED = "dropped"
"""Denied by its person, or never confirmed (a run with no feedback window ended)."""
NOT_A_CORRECTION = "none"
"""The model read no correction of the steps in the remark."""
UNCONFIRMED = "unconfirmed"
"""A notice at a run's end: understood remarks not (yet) confirmed, left out of its outcome."""
ANSWERED = "answered"
"""A notice: a yes or no to a remark that was already confirmed or dropped changes nothing."""

Verdict = Literal["confirm", "deny"]

REMARK_NAME = Phrase(
    en="remark {n}",
    zh="反馈 {n}",
)
"""How an understood remark is named, so its person can answer it later ("yes, remark 2")."""

_NAMED = re.compile(
    r"\b(?:remark|feedback)\s*#?\s*(\d{1,3})\b|(?:反馈|意见)\s*#?\s*(\d{1,3})"
    r"|第\s*(\d{1,3})\s*条\s*(?:反馈|意见)?",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[\s，,。.!！~～、:：;；]+")
CONFIRMATIONS = frozenset(
    {"对", "对的", "是", "是的", "确认", "没错", "好", "好的", "可以", "行", "嗯", "正确", "同意"}
    | {"yes", "y", "yep", "yeah", "ok", "okay", "confirm", "confirmed", "correct", "right"}
    | {"sure", "agreed", "exactly"}
)
"""Words that confirm ("对，确认", "yes, correct")."""
DENIALS = frozenset(
    {"不对", "不是", "错了", "不", "否", "取消", "算了", "不用", "不要", "不是这个意思", "理解错了"}
    | {"no", "nope", "wrong", "deny", "denied", "incorrect", "cancel", "drop", "not"}
)
"""Words that deny ("不对", "no, wrong")."""
_FILLER = frozenset(
    {"it", "that", "that's", "this", "is", "was", "please", "thanks", "the", "i", "meant"}
    | {"what", "to", "for", "one", "这条", "这个", "那条", "吧", "了", "的"}
)


def named_remarks(text: str) -> set[int]:
    """The remark numbers ``text`` names ("remark 2", "反馈 2", "第 2 条反馈")."""
    return {int(next(g for g in m.groups() if g)) for m in _NAMED.finditer(text)}


def verdict(text: str) -> Verdict | None:
    """Whether ``text`` (its remark names aside) is a plain yes (``confirm``), a plain no
    (``deny``), or anything else (None: more than a yes or no, or both)."""
    said = [w for w in _SPLIT.split(_NAMED.sub(" ", text).strip().casefold()) if w]
    said = [w for w in said if w not in _FILLER]
    yes = [w for w in said if w in CONFIRMATIONS]
    no = [w for w in said if w in DENIALS]
    if not said or len(yes) + len(no) != len(said):
        return None
    if no:
        return "deny"  # "not right", "no, correct that": any no word is a no
    return "confirm"


def is_confirmation(text: str) -> bool:
    """Whether ``text`` is only confirmation words ("对", "确认", "yes", "OK!")."""
    return verdict(text) == "confirm"


def is_remark(event: Event, *statuses: str) -> bool:
    """Whether ``event`` is a ``remark`` event with one of ``statuses``."""
    if event.kind != EventKind.REMARK:
        return False  # checked first: settlement() asks this of every event, for every remark
    said = payload_of(event)
    return isinstance(said, RemarkPayload) and said.status in statuses


def remark_of(event: Event) -> RemarkPayload:
    """``event``'s remark payload; an empty one for any other event (every field unset)."""
    said = payload_of(event)
    return said if isinstance(said, RemarkPayload) else _NO_REMARK


def understood_in(events: Sequence[Event]) -> list[Event]:
    """The understood remarks in ``events``, oldest first (their numbers are 1, 2, …)."""
    return [e for e in events if is_remark(e, UNDERSTOOD)]


def settlement(events: Sequence[Event], understood: Event) -> Event | None:
    """The event that confirmed or dropped ``understood``, if any."""
    return next(
        (
            e
            for e in events
            if is_remark(e, CONFIRMED, DROPPED) and remark_of(e).understood == understood.id
        ),
        None,
    )


def referred(events: Sequence[Event], message: Event) -> Event | None:
    """The understood remark ``message`` refers to: the one its ``reply_to`` names (the
    remark event, or the message it was read from), else the one it names by number."""
    reply_to = message.meta.get(REPLY_TO)
    read = understood_in(events)
    if isinstance(reply_to, str) and reply_to:
        found = next((e for e in read if reply_to in (e.id, remark_of(e).remark)), None)
        if found is not None:
            return found
    numbers = named_remarks(message.text)
    if len(numbers) != 1:
        return None  # none named, or several: which one a "yes" is for is not clear
    [number] = numbers
    return next((e for e in read if remark_of(e).number == number), None)


def open_remarks(events: Sequence[Event], person: str | None = None) -> list[Event]:
    """The understood remarks in ``events`` (of ``person``) not yet confirmed or dropped."""
    return [
        e
        for e in understood_in(events)
        if (person is None or remark_of(e).by == person) and settlement(events, e) is None
    ]


def settle_content(understood: Event, status: str, text: str) -> dict[str, Any]:
    """The content of the ``remark`` event that confirms or drops ``understood``."""
    said = remark_of(understood)
    return {
        "status": status,
        "by": said.by,
        "understood": understood.id,
        "number": said.number,
        "text": text,
        "english": said.english,
        "corrections": said.corrections if status == CONFIRMED else [],
    }


CONFIRMED_TEXT = Phrase(
    en="{name} confirmed, counted in this run: {told}",
    zh="{name} 已确认，计入本次运行：{told}",
)
DENIED_TEXT = Phrase(
    en="{name} not counted: {told} (you said that is not what you meant)",
    zh="{name} 未计入：{told}（你说这不是你的意思）",
)
ALREADY_CONFIRMED = Phrase(
    en="{name} was already confirmed; this answer changes nothing",
    zh="{name} 已经确认过了，这次回答不改变什么",
)
ALREADY_DROPPED = Phrase(
    en="{name} was already dropped; to count it, say the correction again",
    zh="{name} 已经不计入了；要计入，请重新说一遍这条纠正",
)
NOT_THEIRS = Phrase(
    en="{name} is {person}'s remark: only {person} can confirm or deny it",
    zh="{name} 是 {person} 的反馈，只有 {person} 能确认或否认",
)
OPEN_AT_END = Phrase(
    en="not counted in this run's outcome: {names} (unconfirmed); a confirmation within {window} "
    "still counts it",
    zh="未计入本次运行的结果：{names}（尚未确认）；{window}内确认仍会计入",
)
DROPPED_AT_END = Phrase(
    en="{name} not counted: {told} (not confirmed before the run ended)",
    zh="{name} 未计入：{told}（运行结束前没有确认）",
)
NO_SUCH_REMARK = Phrase(
    en="this answer names no remark open for an answer here (one at a time, as shown: “yes, "
    "remark 1”; a run's remarks close with its feedback window)",
    zh="这条回答没有对应到可以回答的反馈（一次回答一条，如“对，反馈 1”；运行的反馈窗口关闭后不能再"
    "回答）",
)
HOURS = Phrase(
    en="{n} h",
    zh="{n} 小时",
)
MINUTES = Phrase(
    en="{n} min",
    zh="{n} 分钟",
)
SECONDS = Phrase(
    en="{n} s",
    zh="{n} 秒",
)

AnswerKind = Literal["confirmed", "denied", "already_confirmed", "already_dropped", "not_theirs"]


@dataclass(frozen=True, slots=True)
class Answer:
    """What a person's message does to an understood remark it refers to."""

    understood: Event
    """The understood ``remark`` event answered."""
    kind: AnswerKind
    """``confirmed``/``denied`` settle it; the others only say why nothing changed."""

    @property
    def status(self) -> str:
        """The status of the ``remark`` event the answer writes."""
        return {"confirmed": CONFIRMED, "denied": DROPPED}.get(self.kind, ANSWERED)


def answer_to(events: Sequence[Event], message: Event) -> Answer | None:
    """What ``message`` (a person's, in ``events``) does to the remark it refers to, or None:
    it refers to no understood remark of the run, or it is more than a plain yes or no."""
    target = referred(events, message)
    said = verdict(message.text) if target is not None else None
    if target is None or said is None:
        return None
    if remark_of(target).by != message.author:
        return Answer(target, "not_theirs")
    done = settlement(events, target)
    if done is not None:
        return Answer(
            target, "already_confirmed" if is_remark(done, CONFIRMED) else "already_dropped"
        )
    return Answer(target, "confirmed" if said == "confirm" else "denied")


def unmatched_answer(text: str, person: str) -> dict[str, Any] | None:
    """The notice for a yes or no that names a remark when none it names is open (None when
    ``text`` is no such answer): never silence for someone who thinks they confirmed."""
    if not named_remarks(text) or verdict(text) is None:
        return None
    language = "en" if is_english(text) else "zh"
    return {
        "status": ANSWERED,
        "by": person,
        "text": NO_SUCH_REMARK(language),
        "english": language == "en",
        "corrections": [],
    }


def remark_name(understood: Event, language: str) -> str:
    """An understood remark's name in ``language`` ("remark 2" / "反馈 2")."""
    return REMARK_NAME(language, n=remark_of(understood).number or 1)


def language_of_remark(understood: Event) -> str:
    """The language the room answered the remark in (that of the remark itself)."""
    return "en" if remark_of(understood).english else "zh"


def answer_content(answer: Answer) -> dict[str, Any]:
    """The content of the ``remark`` event that records ``answer``, in the remark's language."""
    understood = answer.understood
    language = language_of_remark(understood)
    name = remark_name(understood, language)
    told = remark_of(understood).told or ""
    texts = {
        "confirmed": CONFIRMED_TEXT,
        "denied": DENIED_TEXT,
        "already_confirmed": ALREADY_CONFIRMED,
        "already_dropped": ALREADY_DROPPED,
        "not_theirs": NOT_THEIRS,
    }
    person = remark_of(understood).by or ""
    text = texts[answer.kind](language, name=name, told=told, person=person)
    return settle_content(understood, answer.status, text)


def window_text(seconds: int, language: str) -> str:
    """A feedback window in people's units ("24 h", "30 分钟")."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return HOURS(language, n=seconds // 3600)
    if seconds >= 60 and seconds % 60 == 0:
        return MINUTES(language, n=seconds // 60)
    return SECONDS(language, n=seconds)


def at_run_end(events: Sequence[Event], window: int) -> list[tuple[str, dict[str, Any]]]:
    """The notices for the run's understood remarks still open as it ends, as (id, content).

    With a feedback window the remarks stay open (a confirmation later still counts, as late
    feedback): one notice per person says they are left out of the outcome for now. With
    none (``sop_feedback_window: 0``) each is dropped.
    """
    notices: list[tuple[str, dict[str, Any]]] = []
    people = sorted({str(remark_of(e).by) for e in open_remarks(events)})
    for person in people:
        mine = open_remarks(events, person)
        language = language_of_remark(mine[-1])
        if window <= 0:
            for understood in mine:
                told = remark_of(understood).told or ""
                text = DROPPED_AT_END(language, name=remark_name(understood, language), told=told)
                notices.append(
                    (f"{understood.id}-dropped-at-end", settle_content(understood, DROPPED, text))
                )
            continue
        names = ", ".join(remark_name(e, language) for e in mine)
        text = OPEN_AT_END(language, names=names, window=window_text(window, language))
        content = {
            "status": UNCONFIRMED,
            "by": person,
            "open": [e.id for e in mine],
            "text": text,
            "english": language == "en",
        }
        notices.append((f"{mine[-1].id}-open-at-end", content))
    return notices
