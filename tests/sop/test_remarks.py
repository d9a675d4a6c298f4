"""Free remarks as corrections: which messages are read, what counts, and counted once a run."""

from __future__ import annotations

from typing import Any

import pytest

from framework.sessions.events import Event, EventKind, make_event
from framework.sop.model import Correction, Step
from framework.sop.outcomes import run_corrections, run_outcome
from framework.sop.remark_answers import REPLY_TO, answer_to, at_run_end, verdict
from framework.sop.remark_words import refers_to_steps
from framework.sop.remarks import (
    CONFIRMED,
    DROPPED,
    UNDERSTOOD,
    RemarkAnswer,
    RemarkItem,
    answer_problem,
    correction_dict,
    is_candidate,
    is_confirmation,
    lenient_answer,
    to_corrections,
    understood_text,
)

STEPS = (
    Step(("pm",), "立题与提纲：明确读者与核心观点，提纲写入 outline.md"),
    Step(("engineer",), "技术评估与正文初稿：核对技术要点，初稿写入 draft.md"),
    Step(("designer",), "配图方案：每节一张图的类型、要点和位置，写入 figures.md"),
    Step(("pm",), "合规自检与定稿：核对出处、脱敏和未公开信息，汇总终稿"),
)
EMPLOYEES = ("pm", "engineer", "designer")
EN_STEPS = (
    Step(("triage",), "Triage the ticket: severity and impact, written to triage.md"),
    Step(("engineer",), "Reproduce the problem and find its cause, written in diagnosis.md"),
    Step(("support_lead",), "Write the reply to the customer from the diagnosis"),
)


def message(
    author: str, text: str, *, human: bool = True, id: str | None = None, **meta: Any
) -> Event:
    meta = {"human": human, **meta}
    return make_event("room:r", EventKind.MESSAGE, author, text, id=id, meta=meta)


def remark(status: str, by: str, corrections: list[Correction], id: str, **more: Any) -> Event:
    content = {"status": status, "by": by, "corrections": [correction_dict(c) for c in corrections]}
    return make_event("room:r", EventKind.REMARK, "system", {**content, **more}, id=id)


@pytest.mark.parametrize(
    "text",
    [
        "配图应该在写正文之前",
        "漏了合规自检",
        "第三步多余",
        "先出配图再写正文",
        "The figures should come before the draft",
        "step 3 is not needed",
        "配图方案这次不用做",  # a phrase of step 3's text
        "纠正: 你应该先写提纲",  # the prefix without the grammar: free words after all
    ],
)
def test_remarks_about_the_steps_are_candidates(text: str) -> None:
    assert is_candidate(text, STEPS)


@pytest.mark.parametrize(
    "text",
    [
        "辛苦了，写得不错",
        "评分: 4/5",
        "对",
        "OK!",
        "纠正: order 3 before 2 先定配图再写正文",  # the grammar counts as it is
        "Thanks, looks great",
    ],
)
def test_chat_scores_confirmations_and_the_grammar_are_not(text: str) -> None:
    assert not is_candidate(text, STEPS)


def test_a_room_without_steps_reads_no_remark() -> None:
    assert not is_candidate("配图应该在写正文之前", ())


@pytest.mark.parametrize(
    "text",
    [
        "Continue please.",  # "Continue" holds "in", "ti", "on": none is a word of a step
        "The reply is fine, send it.",
        "no, that was not a correction. Just continue.",
        "customer_rep: Ticket #4411 from Acme Corp - checkout API returns HTTP 502 on every "
        "second request since 09:40 UTC.",
        "Coffee first, then I'll review.",  # everyday order words, one step word
    ],
)
def test_english_chat_is_read_by_words_not_substrings(text: str) -> None:
    assert not is_candidate(text, EN_STEPS)


@pytest.mark.parametrize(
    "text",
    [
        "The diagnosis should come before the triage next time.",
        "We forgot to check the SLA before replying; add that as a step.",
        "Reproducing should be the very first step.",  # "Reproduce" met in another form
        "Drop the review step, the lead already checks everything.",
    ],
)
def test_english_corrections_are_candidates(text: str) -> None:
    assert is_candidate(text, EN_STEPS)


@pytest.mark.parametrize(
    "text",
    [
        "王先生说配图很漂亮，再见",  # 先…再 as characters of 先生 and 再见, not the words
        "正文之前的引言写得很好",  # 之前 and a step's word, but no change asked
        "读者主要是后端工程师。",  # 后 inside 后端; 读者 a step's word
        "我们需要进一步看看提纲",  # 一步 inside 进一步 names no step
        "下一步之前先看一眼提纲",  # nor inside 下一步
    ],
)
def test_chinese_chat_is_read_by_jiebas_words_not_substrings(text: str) -> None:
    assert not is_candidate(text, STEPS)


def test_stop_words_never_refer_to_a_step() -> None:
    steps = (Step(("pm",), "put it in the box and send it to the team"),)
    assert not refers_to_steps("Is it in there for the rest of us?", steps)
    assert refers_to_steps("the box is late", steps)
    zh = (Step(("pm",), "我们的提纲"),)
    assert not refers_to_steps("我们的", zh)
    assert refers_to_steps("提纲", zh)


@pytest.mark.parametrize("text", ["对", "确认", "对，确认", "yes", "OK!", "好的。"])
def test_confirmation_words(text: str) -> None:
    assert is_confirmation(text)


@pytest.mark.parametrize("text", ["不对", "对吗？", "yes but move step 4 too", "", "第三步多余"])
def test_anything_else_is_not_a_confirmation(text: str) -> None:
    assert not is_confirmation(text)


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        (RemarkItem(kind="order", step=3), "needs 'before'"),
        (RemarkItem(kind="order", step=2, before=3), "already comes before step 3"),
        (RemarkItem(kind="extra", step=7), "step 7 is not a step number 1..4"),
        (RemarkItem(kind="missing", speaker="reviewer", do="合规自检"), "'reviewer' is not one"),
        (RemarkItem(kind="missing", speaker="pm"), "needs 'do'"),
        (RemarkItem(kind="edit", step=2), "needs 'do'"),
    ],
)
def test_an_answer_that_does_not_fit_the_steps_is_unusable(item: RemarkItem, problem: str) -> None:
    found = answer_problem(RemarkAnswer(corrections=[item]), STEPS, EMPLOYEES)
    assert found is not None and problem in found


def test_a_fitting_answer_and_an_empty_one_are_usable() -> None:
    answer = RemarkAnswer(
        corrections=[
            RemarkItem(kind="order", step=3, before=2),
            RemarkItem(kind="missing", speaker="pm", do="合规自检", before=5),  # 5: at the end
        ]
    )
    assert answer_problem(answer, STEPS, EMPLOYEES) is None
    assert answer_problem(RemarkAnswer(corrections=[]), STEPS, EMPLOYEES) is None


def test_a_bare_none_means_no_correction() -> None:
    assert lenient_answer("none") == RemarkAnswer(corrections=[])
    assert lenient_answer("无。") == RemarkAnswer(corrections=[])
    assert lenient_answer("move step 3") is None


def test_what_was_understood_is_shown_in_the_persons_words() -> None:
    answer = RemarkAnswer(
        corrections=[
            RemarkItem(kind="order", step=3, before=2, speaker="ignored", do="ignored"),
            RemarkItem(kind="missing", speaker="pm", do="合规自检"),
            RemarkItem(kind="extra", step=3),
            RemarkItem(kind="edit", step=2, do="只写提纲"),
        ]
    )
    corrections = to_corrections(answer, "配图应该在写正文之前", "author")
    assert corrections[0] == Correction(
        "order", "配图应该在写正文之前", step=3, by="author", before=2
    )
    zh = understood_text(corrections, STEPS, english=False)
    assert zh == (
        "反馈 1，理解为：第 3 步（配图方案）移到第 2 步之前；在最后加一步：pm 做“合规自检”；"
        "去掉第 3 步（配图方案）；第 2 步（技术评估与正文初稿）改为“只写提纲”"
    )
    en = understood_text(corrections[:1], STEPS, english=True, number=2)
    assert en == "remark 2, understood as: move step 3 (配图方案) before step 2"


ORDER = Correction("order", "配图应该在写正文之前", step=3, by="author", before=2)


def understood(number: int = 1, by: str = "author") -> Event:
    return remark(UNDERSTOOD, by, [ORDER], f"m{number}-remark", remark=f"m{number}", number=number)


def test_a_bare_yes_refers_to_no_remark() -> None:
    # Meant for an employee ("对" to the engineer's question), it confirms nothing.
    events = [message("author", "配图应该在写正文之前", id="m1"), understood()]
    assert answer_to(events, message("author", "对")) is None
    assert answer_to(events, message("author", "yes")) is None


@pytest.mark.parametrize(
    ("text", "meta", "kind"),
    [
        ("对，反馈 1", {}, "confirmed"),
        ("yes, remark 1", {}, "confirmed"),
        ("Remark #1: OK", {}, "confirmed"),
        ("第1条反馈 确认", {}, "confirmed"),
        ("对", {REPLY_TO: "m1-remark"}, "confirmed"),  # a reply to the understood remark
        ("yes", {REPLY_TO: "m1"}, "confirmed"),  # a reply to the remark message itself
        ("不对，反馈 1", {}, "denied"),
        ("remark 1: no, wrong", {}, "denied"),
        ("no", {REPLY_TO: "m1-remark"}, "denied"),
    ],
)
def test_a_yes_or_no_that_refers_to_the_remark_settles_it(
    text: str, meta: dict[str, Any], kind: str
) -> None:
    events = [message("author", "配图应该在写正文之前", id="m1"), understood()]
    answer = answer_to(events, message("author", text, **meta))
    assert answer is not None and answer.kind == kind
    assert answer.understood.id == "m1-remark"


@pytest.mark.parametrize(
    "text",
    [
        "yes, remark 2",  # names a remark this run does not have
        "remark 1 is fine but also move step 4",  # more than a yes or no
        "yes, remark 1 and remark 2",  # which one is not clear
    ],
)
def test_an_answer_that_is_not_clear_settles_nothing(text: str) -> None:
    events = [message("author", "配图应该在写正文之前", id="m1"), understood()]
    assert answer_to(events, message("author", text)) is None


def test_only_its_person_settles_a_remark_and_only_once() -> None:
    events = [understood()]
    said = answer_to(events, message("bob", "yes, remark 1"))
    assert said is not None and said.kind == "not_theirs" and said.status == "answered"
    confirmed = remark(CONFIRMED, "author", [ORDER], "x-answer", understood="m1-remark")
    again = answer_to([*events, confirmed], message("author", "no, remark 1"))
    assert again is not None and again.kind == "already_confirmed"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("对，确认", "confirm"),
        ("OK!", "confirm"),
        ("不对", "deny"),
        ("nope", "deny"),
        ("not right", "deny"),
        ("对吗？", None),
        ("yes but later", None),
        ("", None),
    ],
)
def test_a_plain_yes_or_no(text: str, expected: str | None) -> None:
    assert verdict(text) == expected


def test_open_remarks_at_the_end_stay_open_within_the_window_or_are_dropped_without() -> None:
    events = [understood(1), understood(2)]
    [(_, notice)] = at_run_end(events, 86400)
    assert notice["status"] == "unconfirmed"
    assert notice["text"] == (
        "未计入本次运行的结果：反馈 1, 反馈 2（尚未确认）；24 小时内确认仍会计入"
    )
    dropped = at_run_end(events, 0)
    assert [c["status"] for _, c in dropped] == [DROPPED, DROPPED]
    assert not any(c["corrections"] for _, c in dropped)


def test_one_correction_is_counted_once_a_run() -> None:
    line = "纠正: order 3 before 2 先定配图再写正文"
    events = [
        message("author", f"{line}\n评分: 2/5"),
        message("engineer", f"收到，记下了：\n{line}", human=False),  # quoted on its own line
        message("author", "纠正: ORDER 3 before 2"),  # said again, other reason
        message("author", 'correction: edit 2 "Outline only"\ncorrection: edit 2 "outline  only"'),
    ]
    corrections = run_corrections(events)
    assert [(c.kind, c.step, c.by) for c in corrections] == [
        ("order", 3, "author"),
        ("edit", 2, "author"),
    ]
    assert corrections[0].detail == "先定配图再写正文"  # the first one said keeps its reason


def test_only_confirmed_remarks_count() -> None:
    order = Correction("order", "配图应该在写正文之前", step=3, by="author", before=2)
    extra = Correction("extra", "第四步多余", step=4, by="author")
    events = [
        remark(UNDERSTOOD, "author", [order], "m1-remark"),
        remark(CONFIRMED, "author", [order], "m2-remark-confirmed", understood="m1-remark"),
        remark(UNDERSTOOD, "author", [extra], "m3-remark"),  # never confirmed
        message("author", "纠正: order 3 before 2"),  # the same correction in the grammar
    ]
    assert run_corrections(events) == (order,)
    outcome = run_outcome(events, sop_ref="s@1", session="room:r", reason="sop_complete")
    assert outcome.corrections == (order,) and not outcome.success


def test_an_unconfirmed_remark_leaves_a_run_uncorrected() -> None:
    extra = Correction("extra", "第四步多余", step=4, by="author")
    events = [message("author", "第四步多余"), remark(UNDERSTOOD, "author", [extra], "m-remark")]
    outcome = run_outcome(events, sop_ref="s@1", session="room:r", reason="sop_complete")
    assert outcome.corrections == () and outcome.success
