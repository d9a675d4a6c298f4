"""Build a room's consolidator: which model summarises, whose MEMORY.md gets the facts."""

from __future__ import annotations

from framework.memory.consolidation import Consolidator, extractive_summariser
from framework.memory.model_summary import model_summariser
from framework.models.simulator import SimulatedChatModel
from framework.runtime.deps import RoomDeps

OFFLINE_SUMMARY = "extractive (offline simulator)"


def consolidator_for(deps: RoomDeps) -> Consolidator:
    """The consolidator of one room or DM.

    The first participant's model summarises (a DM's employee); the offline simulator takes
    the deterministic extractive path instead of pretending to summarise (the offline path,
    not a fallback). Facts go to the MEMORY.md of every employee in the session about the
    person who stated them.
    """
    humans = set(deps.plan.humans)
    employees = deps.plan.participants
    model = deps.models.chat[employees[0]]
    if isinstance(model, SimulatedChatModel):
        summariser, by = extractive_summariser(humans), OFFLINE_SUMMARY
    else:
        profile = deps.models.profiles[employees[0]]
        summariser = model_summariser(
            model,
            deps.renderer,
            humans,
            profile,
            retries=deps.settings.model_retries,
            backoff=deps.settings.model_backoff,
        )
        by = profile.label
    return Consolidator(
        log=deps.log,
        history=deps.memory.history(deps.key),
        memory_for=deps.memory.memory,
        employees=employees,
        window=deps.plan.settings.memory_window,
        summarise=summariser,
        summarised_by=by,
    )
