"""Scenarios: ``scenarios/*.yaml``, a room template saying who takes part and how it opens.

The scenario says *who* (participants, humans); the SOP named in the announcement's ``sop``
slot says *in what order*. Cross-checks against the employees and SOPs that exist live in
:mod:`framework.specs.catalog`; this module only checks the file on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import jinja2
from jinja2 import nodes
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from framework.errors import ScenarioError
from framework.names import NAME_FIX, is_name
from framework.prompts.sandbox import parse_string

from .employee import LanguageTag, Slug
from .limits import MAX_LABEL_CHARS, MAX_TEXT_CHARS
from .model_spec import ModelSpec
from .yaml_loader import SpecModel, load_yaml_file, spec_error, validate

SOP_FUNCTION = "best_sop"
"""The function an announcement's ``sop`` template calls to insert the best SOP version."""


def _person_names(value: list[str]) -> list[str]:
    # People's names become folders (memory/{employee}/{name}/): they must stay inside.
    for index, name in enumerate(value):
        if not is_name(name):
            raise spec_error(f"invalid name {name[:80]!r}", NAME_FIX, at=(index,))
    return value


class Announcement(BaseModel):
    """What the room posts at entry: fixed text plus an SOP slot filled at that moment."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="posted at room entry and sent in every prompt",
        examples=["本群目标：两天内完成技术分享文章定稿。"],
    )
    sop: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="jinja2 template rendered at room entry; best_sop(id) inserts the steps",
        examples=["{{ best_sop('tech-article') }}"],
    )

    @field_validator("sop")
    @classmethod
    def _sop_parses(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_string(value)
            except jinja2.TemplateSyntaxError as exc:
                raise spec_error(
                    f"the sop template does not parse: {exc.message}",
                    "write e.g. \"{{ best_sop('tech-article') }}\" (quote the whole value)",
                ) from None
        return value


def _count(default: int, *, low: int, high: int, description: str) -> Any:
    """A whole-number knob of :class:`ScenarioSettings` (pydantic's ``Field``).

    Strict: ``true`` or ``12.5`` is a mistake, not 1 or 12. ``high`` is far above any real
    room and keeps a typo (``recent_turns: 1000000``) from becoming a runaway prompt."""
    return Field(
        default=default,
        ge=low,
        le=high,
        strict=True,
        description=description,
        examples=[default],
    )


class ScenarioSettings(BaseModel):
    """Knobs for one room; every one has a default."""

    model_config = ConfigDict(extra="forbid")

    task_type: Slug | None = Field(
        default=None,
        description="the kind of work this room does (writing, auditing, sales...): "
        "knowledge.yaml's loading table maps it to the topics its employees get",
        examples=["writing"],
    )
    max_turns: int = _count(
        30, low=1, high=10_000, description="employee turns before the room stops"
    )
    memory_window: int = _count(
        20, low=1, high=1_000, description="unconsolidated turns before older ones are summarised"
    )
    tool_output_budget: int = _count(
        4000, low=200, high=1_000_000, description="characters of one tool result shown to a model"
    )
    recent_turns: int = _count(
        12, low=1, high=1_000, description="raw recent turns put into each context"
    )
    model: ModelSpec | None = Field(
        default=None, description="model for every employee here (overrides the cards)"
    )
    selector: Literal["round_robin", "model", "none"] = Field(
        default="round_robin",
        description="who speaks when neither the SOP nor an @mention decides (none: nobody; "
        "employees speak only when @mentioned or handed the turn, as a busy group chat wants)",
    )
    selector_model: ModelSpec | None = Field(
        default=None, description="model used by selector: model (default: the room's model)"
    )
    stop_words: list[str] = Field(
        default_factory=lambda: ["/stop", "结束会议"],
        description="a human message equal to one of these ends the room",
    )
    sop_feedback: bool = Field(
        default=True,
        description="after each run, propose the next SOP version from the outcome's corrections",
    )
    sop_auto_publish: bool = Field(
        default=False, description="publish proposed SOP versions at once instead of as drafts"
    )
    sop_auto_extract: bool = Field(
        default=True,
        description="in a room with no SOP of its own, propose an SOP draft without being asked "
        "when an employee reports the task done or the session ends, if the work is worth keeping",
    )
    sop_reviewers: list[str] = Field(
        default_factory=list,
        description="who must approve a proposed SOP version before it is published",
        examples=[["author", "team-lead"]],
    )
    sop_trial_share: float = Field(
        default=0.5,
        ge=0,
        lt=1,
        strict=True,
        description="share of new rooms that run a newly published SOP version as a trial "
        "beside the best (0: no trials, the best by score serves every room)",
        examples=[0.5],
    )
    sop_trial_runs: int = _count(
        3,
        low=1,
        high=1000,
        description="runs of the trial version and of the best, each, before the trial is "
        "judged: rolled back if it did worse, else the new best",
    )
    sop_revision_threshold: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="how many runs must ask for an SOP change (and more than ask the opposite) "
        "before a version proposes it",
    )
    sop_feedback_window: int = Field(
        default=86400,
        ge=0,
        description="seconds after a run closed during which its people's corrections and score "
        "still count for that run (0: only during the run)",
    )
    double_texting: Literal["enqueue", "reject", "interrupt", "coalesce"] = Field(
        default="enqueue",
        description="what a message arriving while the room is answering does (server and "
        "chat adapters): enqueue (waits its turn), reject (409 with the room's state), "
        "interrupt (the run stops between turns and takes it), coalesce (one person's "
        "messages within coalesce_window become one turn)",
        examples=["enqueue"],
    )
    coalesce_window: float = Field(
        default=2.0,
        ge=0.0,
        le=60.0,
        description="seconds a message waits for more from the same person (double_texting: "
        "coalesce)",
        examples=[2.0],
    )

    @field_validator("stop_words")
    @classmethod
    def _stop_words(cls, value: list[str]) -> list[str]:
        # An empty stop word would end the room on an empty message; a long one is a paste.
        fix = 'write words a person types to end the room, e.g. ["/stop", "结束会议"]'
        for index, word in enumerate(value):
            if not word.strip():
                raise spec_error("a stop word is empty or only spaces", fix, at=(index,))
            if len(word) > MAX_LABEL_CHARS:
                raise spec_error(
                    f"stop word is {len(word):,} characters (at most {MAX_LABEL_CHARS})",
                    fix,
                    at=(index,),
                )
        return value

    @field_validator("sop_reviewers")
    @classmethod
    def _reviewer_names(cls, value: list[str]) -> list[str]:
        # Reviewers are people: the same rule as humans, checked here rather than at review.
        return _person_names(value)


class Scenario(SpecModel):
    """A room template: participants, humans, the opening announcement and settings."""

    id: Slug = Field(examples=["tech-article"])
    title: str = Field(max_length=MAX_LABEL_CHARS, examples=["技术分享文章定稿"])
    participants: list[Slug] = Field(
        min_length=1, description="employee ids", examples=[["pm", "engineer", "designer"]]
    )
    humans: list[str] = Field(
        default_factory=lambda: ["user"],
        min_length=1,
        description="names of the people in the room (letters, digits, - _ . @ +)",
        examples=[["author"]],
    )
    announcement: Announcement
    settings: ScenarioSettings = Field(default_factory=ScenarioSettings)
    description: str = Field(default="", max_length=MAX_TEXT_CHARS)
    language: LanguageTag | None = Field(
        default=None,
        description="language the framework writes the room's shared text in (SOP list, "
        "notices, prompts): en or zh; empty = the cards' when they agree, else the "
        "announcement's. People's replies still follow the people's language",
        examples=["en"],
    )

    @field_validator("announcement", mode="before")
    @classmethod
    def _text_shorthand(cls, value: Any) -> Any:
        # `announcement: 本群目标...` is the common case when there is no SOP slot.
        return {"text": value} if isinstance(value, str) else value

    @field_validator("humans")
    @classmethod
    def _safe_names(cls, value: list[str]) -> list[str]:
        # A person's name becomes a folder (memory/{employee}/{name}/): it must stay inside.
        return _person_names(value)

    @field_validator("participants")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        for index, name in enumerate(value):
            if name in value[:index]:
                raise spec_error(
                    f"'{name}' is listed twice in participants",
                    "list each employee once",
                    at=(index,),
                )
        return value

    @model_validator(mode="after")
    def _humans_are_not_employees(self) -> Scenario:
        # A human named like an employee would make @mentions and stop checks ambiguous.
        for index, human in enumerate(self.humans):
            if human in self.participants:
                raise spec_error(
                    f"human '{human}' has the same name as a participant",
                    "give the human another name (e.g. 'author')",
                    at=("humans", index),
                )
        return self

    def referenced_sop_ids(self) -> list[str]:
        """SOP ids named by ``best_sop('...')`` calls in the announcement's ``sop`` slot.

        Walks the jinja2 AST, so ``{{ best_sop("a") ~ best_sop('b') }}`` and calls inside
        ``{% if %}`` blocks are found; non-constant arguments cannot be known and are skipped.
        """
        if not self.announcement.sop:
            return []
        tree = jinja2.Environment().parse(self.announcement.sop)
        found: list[str] = []
        for call in tree.find_all(nodes.Call):
            if not (isinstance(call.node, nodes.Name) and call.node.name == SOP_FUNCTION):
                continue
            arg = call.args[0] if call.args else None
            if (
                isinstance(arg, nodes.Const)
                and isinstance(arg.value, str)
                and arg.value not in found
            ):
                found.append(arg.value)
        return found


def load_scenario(path: str | Path) -> Scenario:
    """Load one scenario file; raise :class:`ScenarioError` naming file, line, field and fix."""
    path = Path(path)
    data, lines = load_yaml_file(path, error_cls=ScenarioError)
    return validate(Scenario, data, file=path, lines=lines, error_cls=ScenarioError)


def dm_scenario(employee: str, display_name: str, user: str, announcement: str) -> Scenario:
    """The scenario of a DM: ``user`` alone with ``employee`` (shown as ``display_name``),
    with ``announcement`` (the SOPs recommended to it) as its announcement."""
    return Scenario.model_validate(
        {
            "id": f"dm-{employee}",
            "title": f"DM with {display_name}",
            "participants": [employee],
            "humans": [user],
            "announcement": {"text": announcement},
        }
    )


__all__ = [
    "SOP_FUNCTION",
    "Announcement",
    "Scenario",
    "ScenarioSettings",
    "dm_scenario",
    "load_scenario",
]
