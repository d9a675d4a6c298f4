"""Who must approve a draft before it is published: the review rule (pure).

A draft needs an approval from every reviewer recorded when it was proposed (the scenario's
``sop_reviewers``) and every reviewer the publisher names (``--require``). A draft with nobody
named (an extracted practice, a card, a scenario without ``sop_reviewers``) needs one approval
by anyone when the caller asks for it: ``staffroom sop publish`` always does, so no draft
reaches rooms unread. ``sop_auto_publish: true`` is the scenario's explicit waiver: its
proposals are published at once and never wait for review.
"""

from __future__ import annotations

from collections.abc import Sequence

from framework.errors import InputError
from framework.sop.model import SopVersion


def unapproved(version: SopVersion, reviewers: Sequence[str], *, need_approval: bool) -> None:
    """Raise :class:`InputError` naming who has not approved ``version`` yet, with the fix.

    ``reviewers``: everyone who must approve (duplicates are fine). ``need_approval``: with
    nobody named, one approval by anyone is still required.
    """
    approved = {a.reviewer for a in version.approvals}
    missing = [r for r in dict.fromkeys(reviewers) if r not in approved]
    if missing:
        how = "; ".join(f"staffroom sop approve {version.ref} --by {r}" for r in missing)
        raise InputError(
            f"SOP {version.ref} needs approval from: {', '.join(missing)}",
            field="approvals",
            fix=f"each of them must approve the draft before it is published: {how}",
        )
    if need_approval and not reviewers and not approved:
        raise InputError(
            f"SOP {version.ref} is a draft nobody has approved (no reviewers were recorded "
            "when it was proposed)",
            field="approvals",
            fix=f"read it (staffroom sop show {version.ref}), then approve it: staffroom sop "
            f"approve {version.ref} --by NAME; or name who must: --require NAME",
        )
