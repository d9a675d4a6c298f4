"""Where each extracted item goes, and what it did there (created, merged, already known).

Tasks and goals go to trackers, knowledge, patterns and decisions to topic files (general
knowledge is also promoted to the shared library, with its source), improvements to
proposals a person decides on, questions to the employee they are for (as a task to answer)
or wait on the person. Each layer deduplicates: a repeated task is merged, never added twice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from framework.knowledge.base import KnowledgeBase
from framework.knowledge.items import Item
from framework.knowledge.topics import TopicChange
from framework.names import is_name

DEFAULT_TOPICS = {
    "knowledge": ("learning", "notes"),
    "pattern": ("learning", "patterns"),
    "decision": ("strategy", "decisions"),
}
"""Category and topic of an item whose topic the pass did not name."""


@dataclass(frozen=True, slots=True)
class Routed:
    """One item's destination and what happened there."""

    category: str
    text: str
    to: str
    """e.g. ``trackers/pm/tasks.json#t-003``, ``knowledge/pm/strategy/发布.md``."""
    outcome: str
    """``created``, ``merged`` (known already: a note was added), ``added``, ``known``,
    ``promoted``, ``closed`` (a finished item said again: left closed)."""

    def as_dict(self) -> dict[str, str]:
        """JSON-ready (for the run's event)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Team:
    """Who is in the session: the employees (ids) and people an item may be for."""

    employees: list[str]
    humans: list[str]
    owner: str
    """Whose layers an item goes to when nobody else is named (the employee who said it)."""


def route(items: list[Item], kb: KnowledgeBase, team: Team, *, session: str) -> list[Routed]:
    """Put each item in its layer (blocking file I/O: call from a worker thread)."""
    return [r for item in items for r in _route(item, kb, team, session)]


def _owner(item: Item, team: Team) -> str:
    said = item.said_by
    return said if said in team.employees else team.owner


def _route(item: Item, kb: KnowledgeBase, team: Team, session: str) -> list[Routed]:
    owner = _owner(item, team)
    target = item.for_whom if item.for_whom and is_name(item.for_whom) else None
    c, text = item.category, item.text
    if c == "task":
        if target in team.employees:
            owner, target = target, None
        added = kb.trackers.add_task(owner, text, waiting_for=target, source=session)
        return [Routed(c, text, f"trackers/{owner}/tasks.json#{added.item.id}", added.outcome)]
    if c == "goal":
        goal = kb.trackers.add_goal(owner, text, source=session)
        return [Routed(c, text, f"trackers/{owner}/goals.json#{goal.item.id}", goal.outcome)]
    if c == "question":
        if target in team.employees and target != owner:
            ask = kb.trackers.add_task(target, f"回答 {owner} 的问题：{text}", type="think")
            return [Routed(c, text, f"trackers/{target}/tasks.json#{ask.item.id}", ask.outcome)]
        person = target or (team.humans[0] if team.humans else None)
        wait = kb.trackers.add_task(owner, text, type="think", waiting_for=person, source=session)
        return [Routed(c, text, f"trackers/{owner}/tasks.json#{wait.item.id}", wait.outcome)]
    if c == "improvement":
        people = [target] if target else team.humans or [owner]
        made = kb.trackers.add_proposal(owner, people, text, text, source=session)
        return [Routed(c, text, f"trackers/proposals.json#{made.item.id}", made.outcome)]
    category, default = DEFAULT_TOPICS[c]
    topic = item.topic or default
    store = kb.topics(owner)
    change = store.update(topic, category, add=[text], note=f"{c} from {session}")
    routed = [Routed(c, text, _where(kb, change), "added" if change.changed else "known")]
    if item.general and c == "knowledge":
        shared = kb.library.promote(
            store, change.topic.slug, by=owner, source=f"knowledge/{owner}", entries=[text]
        )
        routed.append(
            Routed(c, text, _where(kb, shared), "promoted" if shared.changed else "known")
        )
    return routed


def _where(kb: KnowledgeBase, change: TopicChange) -> str:
    path = change.topic.path
    return str(path.relative_to(kb.data_dir)) if path.is_relative_to(kb.data_dir) else str(path)
