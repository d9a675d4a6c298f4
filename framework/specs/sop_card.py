"""SOP cards: markdown with YAML front matter, one file per version, and the library of them.

::

    ---
    id: tech-article
    version: 1
    scope: scenario:tech-article
    goal: 技术分享文章从立题到定稿
    steps:
      - {speaker: pm, do: 立题与提纲, tools: [write_file], produces: [outline.md]}
      - {speaker: [designer, reviewer], do: 配图与合规自检, parallel: true}
    ---
    Free-form notes for people reading the card.

A version is never edited in place: a change is a new file with the next ``version`` and a
``change_log`` entry saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from framework.errors import InputError, SopCardError, UnknownNameError

from ._explain import hint
from .employee import Slug
from .limits import MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS, MAX_VERSION
from .sop_text import render_steps
from .step import SopStep, Step
from .yaml_loader import LineMap, SpecModel, load_yaml_text, read_text, spec_error, validate

_SCOPE = re.compile(rf"^(global|(scenario|employee):[a-z0-9][a-z0-9_-]{{0,{MAX_ID_CHARS - 1}}})$")
_FENCE = re.compile(r"^(---|\.\.\.)\s*$")


class ChangeLogEntry(BaseModel):
    """Why a version exists: what changed and where the evidence came from."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    version: int = Field(ge=1, le=MAX_VERSION, strict=True, examples=[2])
    why: str = Field(max_length=MAX_TEXT_CHARS, examples=["用户两次要求先出提纲再评估"])
    from_: str | None = Field(
        default=None,
        alias="from",
        max_length=MAX_LABEL_CHARS,
        description="session the change came from",
        examples=["room:launch-41"],
    )
    by: str | None = Field(
        default=None,
        max_length=MAX_LABEL_CHARS,
        description="who made the change (person or extraction)",
    )


class SopCard(SpecModel):
    """One version of one SOP, as written in its markdown file."""

    id: Slug = Field(examples=["tech-article"])
    version: int = Field(ge=1, le=MAX_VERSION, strict=True, examples=[1])
    scope: str = Field(
        description="global, scenario:<id> or employee:<id>", examples=["scenario:tech-article"]
    )
    goal: str = Field(max_length=MAX_TEXT_CHARS, examples=["技术分享文章从立题到定稿"])
    status: Literal["draft", "published", "deprecated"] = "published"
    steps: list[SopStep] = Field(min_length=1, examples=[[{"speaker": "pm", "do": "立题与提纲"}]])
    change_log: list[ChangeLogEntry] = Field(default_factory=list)
    body: SkipJsonSchema[str] = Field(default="", description="markdown after the front matter")

    @field_validator("scope")
    @classmethod
    def _scope_shape(cls, value: str) -> str:
        if not _SCOPE.match(value):
            raise spec_error(
                f"scope '{value[:80]}' is not global, scenario:<id> or employee:<id>",
                "write e.g. `scope: scenario:tech-article` or `scope: global`",
            )
        return value

    @field_validator("change_log")
    @classmethod
    def _log_not_ahead(
        cls, value: list[ChangeLogEntry], info: ValidationInfo
    ) -> list[ChangeLogEntry]:
        version = info.data.get("version")
        for index, entry in enumerate(value):
            if version is not None and entry.version > version:
                raise spec_error(
                    f"change_log entry for version {entry.version} in a version {version} card",
                    "a card logs its own version and earlier ones; fix the number",
                    at=(index, "version"),
                )
        return value

    @property
    def ref(self) -> str:
        """``id@version``, as events and outcomes name it."""
        return f"{self.id}@{self.version}"

    def render_text(self, language: str | None = None) -> str:
        """The steps as a numbered list for a room announcement (``1. pm：立题与提纲``);
        labels in ``language``, else in the card's own (see :func:`render_steps`)."""
        return render_steps(self.ref, self.goal, self.to_steps(), language)

    def to_steps(self) -> tuple[Step, ...]:
        """The steps as code reads them past the card (:meth:`SopStep.to_step`)."""
        return tuple(step.to_step() for step in self.steps)


def split_front_matter(text: str, path: Path) -> tuple[str, str, int]:
    """``(yaml_text, body, first_yaml_line)``; :class:`SopCardError` if there is none."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    fix = (
        "start the file with a line '---', then the fields (id, version, scope, goal, steps), "
        "then a line '---', then the notes"
    )
    if not lines or lines[0].strip() != "---":
        raise SopCardError(
            "no YAML front matter: the first line must be '---'", file=path, line=1, fix=fix
        )
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            return "".join(lines[1:index]), "".join(lines[index + 1 :]).strip("\n"), 2
    raise SopCardError(
        "front matter is never closed", file=path, line=1, fix="add a line '---' after the fields"
    )


def has_front_matter(path: Path) -> bool:
    """True if the file's first line is ``---`` (cheap test used to detect SOP cards)."""
    try:
        with path.open(encoding="utf-8") as handle:
            return handle.readline().removeprefix("\ufeff").strip() == "---"
    except (OSError, UnicodeDecodeError):
        return False


def load_sop_card(path: str | Path) -> SopCard:
    """Load one SOP card; raise :class:`SopCardError` with file, line, field and fix."""
    path = Path(path)
    yaml_text, body, first_line = split_front_matter(read_text(path, SopCardError), path)
    data, lines = load_yaml_text(
        yaml_text, file=path, error_cls=SopCardError, first_line=first_line
    )
    if isinstance(data, dict):
        data = with_notes(data, body, path, lines)
    return validate(SopCard, data, file=path, lines=lines, error_cls=SopCardError)


def with_notes(data: dict[str, Any], body: str, path: Path, lines: LineMap) -> dict[str, Any]:
    """A card's front-matter fields with the notes after it as ``body``; a ``body`` written
    in the front matter is a :class:`SopCardError`."""
    if "body" in data:
        raise SopCardError(
            "'body' is not a front-matter field",
            file=path,
            line=lines.get(("body",)),
            field="body",
            fix="write the notes after the closing '---' instead",
        )
    return {**data, "body": body}


def _claimed_ids(path: Path, root: Path | None) -> list[str]:
    """The SOP ids a card that does not load may be meant for: the id it declares, and its
    folder's name (``tech_article/v2.md``: ``tech_article`` and ``tech-article``)."""
    found: list[str] = []
    try:
        yaml_text, _, first = split_front_matter(read_text(path, SopCardError), path)
        data, _ = load_yaml_text(yaml_text, file=path, error_cls=SopCardError, first_line=first)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            found.append(data["id"])
    except InputError:
        pass  # unreadable: the folder's name is all there is to go on
    name = path.stem if path.parent == root else path.parent.name
    return list(dict.fromkeys([*found, name, name.replace("_", "-")]))


class SopLibrary:
    """All SOP cards under one folder (``**/*.md``; README files are skipped).

    Kept simple on purpose: ``best`` is the highest published version. The scored SQLite
    store replaces it later under the same method name.
    """

    def __init__(self, folder: str | Path | None = None, *, strict: bool = True) -> None:
        """Load every card under ``folder`` (a missing folder is an empty library).

        ``strict``: the first card that does not load raises. Otherwise its error is kept in
        :attr:`problems` and raised only when its SOP is looked up, so one broken card does
        not stop rooms that use other SOPs.
        """
        self.folder = Path(folder) if folder is not None else None
        self._cards: dict[tuple[str, int], SopCard] = {}
        self._broken: dict[str, InputError] = {}
        self.problems: list[InputError] = []
        """Errors of the cards that did not load (``strict=False``), in file order."""
        if self.folder is not None and self.folder.is_dir():
            for path in sorted(self.folder.rglob("*.md")):
                if path.name.lower() == "readme.md":
                    continue
                try:
                    self.add(load_sop_card(path))
                except InputError as exc:
                    if strict:
                        raise
                    self.problems.append(exc)
                    for sop_id in _claimed_ids(path, self.folder):
                        self._broken.setdefault(sop_id, exc)

    def add(self, card: SopCard) -> None:
        """Add a card; a second card with the same id and version is a :class:`SopCardError`."""
        key = (card.id, card.version)
        if key in self._cards:
            first = self._cards[key]
            raise SopCardError(
                f"SOP {card.ref} is defined twice: also in {first.source}:"
                f"{first.line_of('version')}",
                file=card.source,
                line=card.line_of("version"),
                field="version",
                fix=f"versions are never overwritten: make this one version "
                f"{max(self.versions(card.id)) + 1}, or delete one of the two files",
            )
        self._cards[key] = card

    def broken(self) -> dict[str, InputError]:
        """SOP id -> the error of a card meant for it that did not load (``strict=False``)."""
        return dict(self._broken)

    def __iter__(self) -> Iterator[SopCard]:
        return iter(sorted(self._cards.values(), key=lambda c: (c.id, c.version)))

    def __len__(self) -> int:
        return len(self._cards)

    def __contains__(self, sop_id: object) -> bool:
        return any(sop_id == key[0] for key in self._cards)

    def ids(self) -> list[str]:
        """SOP ids, sorted."""
        return sorted({key[0] for key in self._cards})

    def versions(self, sop_id: str) -> list[int]:
        """Versions of ``sop_id``, ascending (empty if the id is unknown)."""
        return sorted(version for key_id, version in self._cards if key_id == sop_id)

    def get(self, sop_id: str, version: int) -> SopCard:
        """One version; :class:`UnknownNameError` if the id or the version does not exist."""
        self._require(sop_id)
        card = self._cards.get((sop_id, version))
        if card is None:
            raise UnknownNameError(
                f"SOP '{sop_id}' has no version {version}",
                field="version",
                fix=f"versions of '{sop_id}': {', '.join(map(str, self.versions(sop_id)))}",
            )
        return card

    def published(self, sop_id: str) -> list[SopCard]:
        """Published versions of ``sop_id``, ascending."""
        return [
            self._cards[(sop_id, v)]
            for v in self.versions(sop_id)
            if self._cards[(sop_id, v)].status == "published"
        ]

    def best(self, sop_id: str) -> SopCard:
        """The highest published version; :class:`UnknownNameError` if there is none."""
        self._require(sop_id)
        published = self.published(sop_id)
        if not published:
            raise UnknownNameError(
                f"SOP '{sop_id}' has no published version (only drafts or deprecated ones)",
                fix="set `status: published` in the version to use",
            )
        return published[-1]

    def _require(self, sop_id: str) -> None:
        broken = self._broken.get(sop_id)
        if broken is not None:
            # A version of it may be the best one: it must be fixed first.
            raise broken.with_traceback(None)
        if sop_id not in self:
            known = self.ids()
            raise UnknownNameError(
                f"unknown SOP '{sop_id}'{hint(sop_id, known)}",
                file=self.folder,
                fix=f"known SOPs: {', '.join(known) or '(none)'}; or add "
                f"{self.folder or 'sop_library'}/{sop_id}/v1.md",
            )


__all__ = [
    "ChangeLogEntry",
    "SopCard",
    "SopLibrary",
    "SopStep",
    "has_front_matter",
    "load_sop_card",
    "render_steps",
    "split_front_matter",
    "with_notes",
]
