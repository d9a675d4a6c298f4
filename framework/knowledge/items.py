"""What an extraction pass produces: items in seven categories, each routed to a layer.

=============== ===========================================================
category        goes to
=============== ===========================================================
``task``        the employee's task tracker (or the tracker of whom it is for)
``goal``        the employee's goal tracker
``pattern``     a topic file (category ``learning``)
``improvement`` a cross-employee improvement proposal (a person decides)
``knowledge``   a topic file; promoted to the shared library when ``general``
``decision``    a topic file (category ``strategy``)
``question``    the tracker of the employee it is for, or waits on the person
=============== ===========================================================
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, Field

Category = Literal["task", "goal", "pattern", "improvement", "knowledge", "decision", "question"]
CATEGORIES: tuple[Category, ...] = get_args(Category)


@dataclass(frozen=True, slots=True)
class Item:
    """One extracted item."""

    category: Category
    text: str
    for_whom: str | None = None
    """Tasks and questions: the employee or person it is for (None: the extracting one)."""
    topic: str | None = None
    """Knowledge, decisions, patterns: the topic file it belongs in (None: a default)."""
    general: bool = False
    """Knowledge useful to every employee (promoted to the shared library)."""
    said_by: str | None = None
    """Who said the sentence it came from, when the pass knows (the rules do)."""

    @property
    def key(self) -> str:
        """What two items must share to be the same item (category + normalised text)."""
        return f"{self.category}:{normalise(self.text)}"


def normalise(text: str) -> str:
    """Text as compared for duplicates: NFKC (full-width = half-width), case, punctuation
    and whitespace folded."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", "", folded)


def dedupe(items: list[Item]) -> list[Item]:
    """``items`` without repeats (the first of each key is kept, in order)."""
    seen: dict[str, Item] = {}
    for item in items:
        seen.setdefault(item.key, item)
    return list(seen.values())


class ItemAnswer(BaseModel):
    """One item as a model answers it."""

    category: Category
    text: str = Field(min_length=2, max_length=500)
    for_whom: str | None = Field(
        default=None, description="who a task or question is for (an employee id or a person)"
    )
    topic: str | None = Field(
        default=None, max_length=80, description="the topic a knowledge item or decision is about"
    )
    general: bool = Field(
        default=False, description="knowledge useful to every employee, not only this one"
    )

    def to_item(self) -> Item:
        """The internal item (text stripped)."""
        return Item(self.category, self.text.strip(), self.for_whom, self.topic, self.general)


class ExtractionAnswer(BaseModel):
    """The JSON a model answers ``extract_knowledge.j2`` with."""

    items: list[ItemAnswer] = Field(description="every item found; [] when there is none")


def categories_of(items: list[Item]) -> list[Category]:
    """The categories present, in the canonical order."""
    present = {i.category for i in items}
    return [c for c in CATEGORIES if c in present]
