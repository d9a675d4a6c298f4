"""The English candidate rule: a remark must name what a step does, and ask rather than report.

Each ordinary message below was a candidate (a model call and an "understood as: …" line in
the room) before the rule asked for a step's anchor and read past-tense reports as weak.
"""

from __future__ import annotations

import pytest

from framework.sop.model import Step
from framework.sop.remark_words import anchors
from framework.sop.remarks import is_candidate

ESCALATION = (
    Step(("triage",), "Triage the ticket: severity and impact, written to triage.md"),
    Step(("engineer",), "Reproduce the problem and find its cause, written in diagnosis.md"),
    Step(("support_lead",), "Write the reply to the customer from the diagnosis"),
)
HIRING = (
    Step(
        ("recruiter",),
        "Screen the candidate's CV against the must-haves",
        produces=("shortlist.md",),
    ),
    Step(("engineer",), "Run the technical interview and score the coding exercise"),
    Step(("manager",), "Hold the culture interview and check references"),
    Step(("recruiter", "manager"), "Decide on the offer and send it to the candidate"),
)


def test_anchors_are_what_a_step_does_not_what_it_handles() -> None:
    found = anchors(ESCALATION)
    assert {"triag", "repro", "find", "diagn", "write"} <= found  # verbs and products
    assert not {"ticke", "custo", "engin", "probl"} & found  # things, people
    hiring = anchors(HIRING)
    assert {"techn", "inter", "cultu", "short"} <= hiring  # a light verb's object; a product
    assert "candi" not in hiring


@pytest.mark.parametrize(
    "text",
    [
        # a change word about the room's everyday things, no step's work named
        "The screenshot is missing from the ticket, can you attach it?",
        "We don't need the customer's password, never ask for it.",
        "Skip lunch, the customer is on the phone.",
        "Move the meeting, the engineer is still debugging.",  # a speaker, not a step
        # a deed reported, not a change asked for
        "I removed the spam ticket from the queue.",
        "The customer deleted their API key by mistake.",
        "We moved the ticket to the billing queue yesterday.",
        "I forgot to attach the diagnosis, here it is.",
        # "order" as a purchase or a sort
        "The customer's order failed at checkout with a 502.",
        "Can we order the tickets by customer in the dashboard?",
    ],
)
def test_everyday_escalation_chat_is_not_a_candidate(text: str) -> None:
    assert not is_candidate(text, ESCALATION)


@pytest.mark.parametrize(
    "text",
    [
        "I removed the duplicate candidate from the list.",
        "Skip the small talk, the candidate is in a hurry.",
        "The candidate forgot to attach the coding exercise.",
        "Order lunch for the interview panel please.",
    ],
)
def test_everyday_hiring_chat_is_not_a_candidate(text: str) -> None:
    assert not is_candidate(text, HIRING)


@pytest.mark.parametrize(
    "text",
    [
        "The diagnosis is pointless for known outages, drop it.",
        "Reproducing is redundant when the logs already show the cause.",
        "The diagnosis write-up should be removed for P4 tickets.",  # passive: still asked
        "We keep forgetting to reproduce before we triage.",
        "Triage should wait until the engineer has reproduced it.",
        "Do the reply first and the diagnosis after, the customer can't wait.",
        "Wrong order: reproduce before triage.",
    ],
)
def test_english_corrections_that_name_a_steps_work_are_candidates(text: str) -> None:
    assert is_candidate(text, ESCALATION)


@pytest.mark.parametrize(
    "text",
    [
        "We don't need the culture interview for interns, drop it.",  # "Hold the …" object
        "References should be checked before the technical interview.",
        "Screening is unnecessary for referrals.",
        "The offer should go out before the culture interview.",
    ],
)
def test_hiring_corrections_are_candidates(text: str) -> None:
    assert is_candidate(text, HIRING)
