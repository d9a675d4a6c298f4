"""The SOP library as rooms use it: best version, explanations, and feedback from outcomes.

Composes the store (persistence), scoring (which version wins, and why) and the reviser
(outcomes -> edit operations -> a new version). One path applies edits, whether they came from
the rule-based reviser (offline) or a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from framework.errors import InputError, UnknownNameError
from framework.sessions.events import utc_now
from framework.sop.edits import EditOp, apply_edits
from framework.sop.library_io import import_library
from framework.sop.model import ChangeLogEntry, Outcome, SopVersion, Status
from framework.sop.model_reviser import Reviser, rule_reviser
from framework.sop.ref import SopRef
from framework.sop.reviser import revision_reason
from framework.sop.scoring import (
    Candidate,
    Choice,
    ScoringPolicy,
    auto_deprecate,
    choose_best,
)
from framework.sop.store import SopStore
from framework.specs.limits import MAX_TEXT_CHARS
from framework.specs.sop_card import render_steps


@dataclass(frozen=True, slots=True)
class Revision:
    """A version proposed from outcomes."""

    version: SopVersion
    ops: list[EditOp]
    published: bool
    by: str = "rules"
    """Who proposed the edits (the change log's ``by``): ``model:<label>`` or ``rules ...``."""


class SopService:
    """Best-version selection and the outcome -> revision loop over one store."""

    def __init__(self, store: SopStore, policy: ScoringPolicy | None = None) -> None:
        self.store = store
        self.policy = policy or ScoringPolicy()
        self.library_problems: dict[str, InputError] = {}
        """SOP id -> why a card of it in ``sop_library/`` was not imported. A room that uses
        that SOP raises it; everything else runs (one broken card stops only its users)."""

    @classmethod
    async def open(cls, path: Path, library: Path | None = None) -> SopService:
        """Open the store at ``path`` and import the SOP cards under ``library`` (idempotent)."""
        store = await SopStore.open(path)
        problems: dict[str, InputError] = {}
        if library is not None and library.is_dir():
            try:
                problems = (await import_library(store, library, strict=False)).problems
            except BaseException:
                await store.close()  # else its worker thread keeps the process alive
                raise
        service = cls(store)
        service.library_problems = problems
        return service

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()

    async def candidates(self, sop_id: str) -> list[Candidate]:
        """Every version of ``sop_id`` with its metrics."""
        return [
            Candidate(v, await self.store.metrics(v.ref)) for v in await self.store.versions(sop_id)
        ]

    async def choose(self, sop_id: str) -> Choice:
        """The scored choice among ``sop_id``'s versions (see ``staffroom sop explain``)."""
        return choose_best(await self.candidates(sop_id), now=datetime.now(UTC), policy=self.policy)

    async def best(self, sop_id: str) -> SopVersion:
        """The best published version of ``sop_id``."""
        choice = await self.choose(sop_id)
        if choice.winner is None:
            raise UnknownNameError(
                f"SOP '{sop_id}' has no published version",
                field="sop",
                fix=f"publish one: staffroom sop publish {sop_id} VERSION",
            )
        return choice.winner.version

    async def recommendations(self, scope: str, *, exclude: Sequence[str] = ()) -> str:
        """Published SOPs in ``scope`` (``employee:<id>`` or ``scenario:<id>``) as text.

        Shown (and injected into prompts) at the start of a DM with that employee, or of a
        room of that scenario: one user's proven practice, published after review, helps
        the next user from the first message on. ``exclude``: SOPs already driving the room.
        """
        blocks = []
        for sop_id in await self.store.for_scope(scope):
            if sop_id in exclude:
                continue
            choice = await self.choose(sop_id)
            if choice.winner is not None:
                v = choice.winner.version
                blocks.append(render_steps(v.ref, v.goal, v.steps))
        if not blocks:
            return ""
        head = "推荐做法 / Recommended practice (published SOPs):"
        # Sent in every prompt: whole SOPs up to the text cap, then a pointer to the rest.
        kept: list[str] = []
        for block in blocks:
            if len(head) + sum(len(b) + 2 for b in [*kept, block]) > MAX_TEXT_CHARS - 100:
                kept.append(f"… {len(blocks) - len(kept)} more: staffroom sop list")
                break
            kept.append(block)
        return head + "\n" + "\n\n".join(kept)

    async def sink(self, sop_id: str) -> list[tuple[SopVersion, str]]:
        """Deprecate published versions whose outcomes fell below the policy's threshold.

        Never the only published version; the reason is written to the change log.
        """
        sunk = auto_deprecate(await self.candidates(sop_id), policy=self.policy)
        for version, reason in sunk:
            await self.store.deprecate(version.sop_id, version.version, reason, by="auto")
        return sunk

    async def record_run(
        self,
        outcome: Outcome,
        *,
        feedback: bool = True,
        auto_publish: bool = False,
        reviewers: Sequence[str] = (),
        reviser: Reviser = rule_reviser,
    ) -> Revision | None:
        """Store a run's outcome against its version and, with ``feedback``, propose the next.

        The proposal is a draft awaiting ``reviewers``, or is published at once when
        ``auto_publish`` (the scenario's policy) says so. A proposal whose steps equal an
        existing version's is not stored again. The change log's ``by`` says who proposed the
        edits (``model:<label>``, or ``rules`` and why the model's edits were not used).
        """
        await self.store.record_outcome(outcome)
        ref = SopRef.parse(outcome.sop_ref, field="sop_ref", require_version=True)
        sop_id = ref.sop_id
        await self.sink(sop_id)
        if not feedback:
            return None
        current = await self.store.get(sop_id, ref.version)
        proposal = await reviser(current, await self.store.outcomes(current.ref))
        ops = proposal.ops
        if not ops:
            return None
        steps = apply_edits(current.steps, ops)
        existing = await self.store.versions(sop_id)
        if any(v.steps == steps for v in existing if v.status != Status.DEPRECATED):
            return None
        version = await self.store.next_version(sop_id)
        entry = ChangeLogEntry(
            version, revision_reason(ops), by=proposal.by, source=outcome.session
        )
        draft = replace(
            current,
            version=version,
            steps=steps,
            status=Status.DRAFT,
            change_log=(*current.change_log, entry),
            approvals=(),
            created_at=utc_now(),
        )
        stored = await self.store.add_version(draft)
        if auto_publish:
            stored = await self.store.publish(sop_id, version)
            await self.store.record_replacement(current.ref, stored.ref)
        return Revision(stored, ops, published=auto_publish, by=proposal.by)


def ensure_known(sop_id: str, ids: Sequence[str]) -> None:
    """Raise a clear error when ``sop_id`` is not in the store."""
    if sop_id not in ids:
        raise UnknownNameError(
            f"unknown SOP '{sop_id}'",
            field="sop",
            fix=f"known SOPs: {', '.join(ids) or 'none'} (import cards with: staffroom sop import)",
        )
