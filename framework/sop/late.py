"""Feedback after a run closed that does not count, and the notice that says so (pure).

A run's outcome may be amended after it closed only by the people who took part in it, and
only within the scenario's ``sop_feedback_window``. Feedback outside those bounds leaves the
SOP as it was; it used to be dropped without a word, so the person believed it counted. Now
the person is told why (:func:`refusal`), in their language. Messages that carry no feedback
(no structured correction, no score, no confirmed remark) get no notice: people may talk
after a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from framework.language import language_of
from framework.phrases import Phrase
from framework.sessions.events import Event
from framework.sop.corrections import parse_correction
from framework.sop.outcomes import stated_score
from framework.sop.remarks import confirmed_corrections

NOT_IN_RUN = Phrase(
    en="{person}: your feedback on {sop} does not count: only the people who took part in "
    "that run ({people}) can amend it. The SOP stays as it was; to have your say, take part "
    "in the next run.",
    zh="{person}：你对 {sop} 的反馈不计入：只有参与了那次运行的人（{people}）可以补充反馈。"
    "SOP 保持不变；想提意见，请参加下一次运行。",
)
WINDOW_CLOSED = Phrase(
    en="{person}: your feedback on {sop} came after its feedback window ({window}) closed: "
    "it does not count, and the SOP stays as it was. Say it in the next run.",
    zh="{person}：你对 {sop} 的反馈晚于反馈时限（{window}）：不计入，SOP 保持不变。"
    "请在下一次运行中提出。",
)
NOBODY = Phrase(
    en="nobody",
    zh="无人",
)
SECONDS = Phrase(
    en="{n} s",
    zh="{n} 秒",
)
HOURS = Phrase(
    en="{n} h",
    zh="{n} 小时",
)


def carries_feedback(text: str, later: Iterable[Event], person: str) -> bool:
    """Whether a person's message is feedback on a run: a structured correction, a score,
    or a remark of theirs confirmed in ``later`` (the events since the run closed)."""
    if any(parse_correction(line) for line in text.splitlines()) or stated_score(text) is not None:
        return True
    return any(c.by == person for e in later for c in confirmed_corrections(e))


def _window(seconds: int, language: str) -> str:
    if seconds and seconds % 3600 == 0:
        return HOURS(language, n=seconds // 3600)
    return SECONDS(language, n=seconds)


def refusal(
    *,
    person: str,
    text: str,
    later: Sequence[Event],
    people: Sequence[str],
    in_window: bool,
    window: int,
    sop_ref: str,
    default_language: str = "en",
) -> str | None:
    """The notice for ``person``'s message after the run of ``sop_ref`` closed, or None when
    it counts (a participant within the window) or carries no feedback."""
    taking_part = person in people
    if taking_part and in_window:
        return None
    if not carries_feedback(text, later, person):
        return None
    language = language_of(text, default_language) if text.strip() else default_language
    if not taking_part:
        named = ", ".join(people) or NOBODY(language)
        return NOT_IN_RUN(language, person=person, sop=sop_ref, people=named)
    return WINDOW_CLOSED(language, person=person, sop=sop_ref, window=_window(window, language))


__all__ = ["carries_feedback", "refusal"]
