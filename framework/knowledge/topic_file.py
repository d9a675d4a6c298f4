"""The topic file format (layer 4): markdown with YAML front matter, parsed and rendered.

::

    ---
    title: 跳出率优先级
    category: learning
    last_review: 2026-05-30
    changes:
    - date: 2026-05-30
      note: created with 2 entries
    - date: 2026-06-02
      note: replaced 1
    ---
    - 一切以数据为依据
    - 价值看实际影响而非产出数量

    ## Superseded
    - 先搭框架再看数据 (superseded by "价值看实际影响而非产出数量", 2026-06-02)

Entries are ``- `` lines (an indented line continues the one above). A library topic also
has ``promoted_from`` (a list of ``{source, topic, by, date}``). People edit these files: one
that cannot be read is an :class:`InputError` naming the line and the fix, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from framework.errors import InputError
from framework.specs.yaml_loader import load_yaml_text, validate

__all__ = [
    "SUPERSEDED",
    "Change",
    "Promotion",
    "Superseded",
    "Topic",
    "parse_topic",
    "render_superseded",
]

SUPERSEDED = "## Superseded"
_FENCE = "---"
_OLD = re.compile(r'^(?P<text>.*?) \(superseded by "(?P<by>.*)", (?P<on>\d{4}-\d{2}-\d{2})\)$')
_BODY_FIX = f"write each entry as a `- ` line; replaced entries go under `{SUPERSEDED}`"


class Change(BaseModel):
    """A short dated note of what changed in a topic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    date: date
    note: str = Field(min_length=1)


class Promotion(BaseModel):
    """Where a library topic's entries came from (front matter ``promoted_from``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1, description="whose knowledge it was", examples=["pm"])
    topic: str = Field(min_length=1, description="category/slug there", examples=["team/x"])
    by: str = Field(min_length=1, description="who promoted it")
    date: date


class _Front(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, examples=["跳出率优先级"])
    category: str = Field(min_length=1, examples=["learning"])
    last_review: date = Field(examples=["2026-05-30"])
    changes: list[Change] = Field(default_factory=list)
    promoted_from: list[Promotion] = Field(default_factory=list)


class _Dumper(yaml.SafeDumper):
    """Plain YAML: two equal dates must not become an ``&id001`` anchor and its alias."""

    def ignore_aliases(self, data: object) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Superseded:
    """An entry that was replaced: its text, what replaced it and when (unknown if hand-written)."""

    text: str
    by: str | None = None
    on: date | None = None


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic file, parsed."""

    slug: str
    category: str
    path: Path
    title: str
    last_review: date
    entries: tuple[str, ...]
    """Current entries (what search and prompts use)."""
    superseded: tuple[Superseded, ...] = ()
    changes: tuple[Change, ...] = ()
    promoted_from: tuple[Promotion, ...] = ()

    def render(self) -> str:
        """The file text."""
        front = _Front(
            title=self.title,
            category=self.category,
            last_review=self.last_review,
            changes=list(self.changes),
            promoted_from=list(self.promoted_from),
        ).model_dump(exclude_defaults=True)
        front.setdefault("changes", [])
        head = yaml.dump(front, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)
        body = [f"- {entry}" for entry in self.entries]
        if self.superseded:
            body += ["", SUPERSEDED, *(f"- {render_superseded(s)}" for s in self.superseded)]
        return f"{_FENCE}\n{head}{_FENCE}\n" + "".join(f"{line}\n" for line in body)


def render_superseded(entry: Superseded) -> str:
    """A superseded line's text (without the leading ``- ``)."""
    if entry.by is None or entry.on is None:
        return entry.text
    return f'{entry.text} (superseded by "{entry.by}", {entry.on.isoformat()})'


def parse_topic(text: str, path: Path) -> Topic:
    """Parse a topic file's ``text``, read from ``path`` (its folder is the category)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != _FENCE:
        raise InputError(
            "no front matter",
            file=path,
            line=1,
            fix="start with a --- block: title, category, last_review, then ---",
        )
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == _FENCE), None)
    if end is None:
        raise InputError(
            "the front matter is not closed",
            file=path,
            line=1,
            fix="end it with a line holding only ---",
        )
    data, where = load_yaml_text("\n".join(lines[1:end]), file=path, first_line=2)
    front = validate(_Front, data, file=path, lines=where, error_cls=InputError)
    if front.category != path.parent.name:
        raise InputError(
            f"category '{front.category}' but the file is in {path.parent.name}/",
            file=path,
            line=where.get(("category",)),
            field="category",
            fix=f"set category: {path.parent.name}, or move the file to {front.category}/",
        )
    current: list[str] = []
    old: list[Superseded] = []
    target: list[str] = current
    raw_old: list[str] = []
    for number, line in enumerate(lines[end + 1 :], start=end + 2):
        if not line.strip():
            continue
        if line.strip().lower() == SUPERSEDED.lower():
            target = raw_old
        elif line.startswith("- ") or line.strip() == "-":
            if line[2:].strip():  # an empty bullet says nothing; it is dropped
                target.append(line[2:].strip())
        elif line[:1] in (" ", "\t") and target:
            target[-1] += " " + line.strip()  # a wrapped entry
        else:
            raise InputError(
                "a line this file cannot read as an entry", file=path, line=number, fix=_BODY_FIX
            )
    for raw in raw_old:
        match = _OLD.match(raw)
        on = match and _date(match["on"])
        old.append(Superseded(match["text"], match["by"], on) if match and on else Superseded(raw))
    return Topic(
        path.stem,
        path.parent.name,
        path,
        front.title,
        front.last_review,
        tuple(current),
        tuple(old),
        tuple(front.changes),
        tuple(front.promoted_from),
    )


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None
