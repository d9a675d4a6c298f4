"""Employee cards: ``agents/<id>.yaml``, one digital employee each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import jinja2
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from framework.errors import CardError
from framework.language import main_language
from framework.names import NAME_FIX, is_name
from framework.phrases import Language, known_language
from framework.prompts.sandbox import parse_string

from ._explain import hint
from .builtin_tools import BUILTIN_TOOLS
from .limits import MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS
from .model_spec import ModelSpec
from .yaml_loader import SpecModel, load_yaml_file, read_text, spec_error, validate

SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"


def _path_safe(value: str) -> str:
    # Ids become folder and file names (memory/<employee>/, sop_library/<id>/): the id rule
    # is a strict subset of the one rule for names in paths, and this keeps it so.
    if not is_name(value):
        raise spec_error(f"id {value[:80]!r} cannot be used in a path", NAME_FIX)
    return value


Slug = Annotated[
    str,
    StringConstraints(pattern=SLUG_PATTERN, max_length=MAX_ID_CHARS),
    AfterValidator(_path_safe),
]
"""An id: 1-64 lowercase letters, digits, ``-`` and ``_`` (``tech-article``, ``pm``)."""


def _known_tool(name: str) -> str:
    if name not in BUILTIN_TOOLS:
        raise spec_error(
            f"unknown tool '{name}'{hint(name, BUILTIN_TOOLS)}",
            f"use one of: {', '.join(BUILTIN_TOOLS)}",
        )
    return name


ToolName = Annotated[str, AfterValidator(_known_tool)]
"""A name from :data:`~framework.specs.builtin_tools.BUILTIN_TOOLS`."""


def _language_tag(value: object) -> object:
    # `zh-CN`, `zh_Hans`, `en-US`, `English` are what people write; the framework has text
    # in two languages, so the tag is read down to one of them, and anything else is refused.
    if isinstance(value, str):
        if (language := known_language(value)) is not None:
            return language
        raise spec_error(
            f"unknown language {value[:40]!r}",
            "write en (English) or zh (Chinese), or leave the field out",
        )
    return value


LanguageTag = Annotated[Language, BeforeValidator(_language_tag)]
"""``en`` or ``zh`` (``en-US``, ``zh-CN`` and the like are read as these)."""


class EmployeeCard(SpecModel):
    """One digital employee: who they are, which model they think with, which tools they hold."""

    id: Slug = Field(description="unique id, used in participants and @mentions", examples=["pm"])
    display_name: str = Field(
        max_length=MAX_LABEL_CHARS, description="name shown in the room", examples=["产品经理小P"]
    )
    role: str = Field(
        max_length=MAX_LABEL_CHARS,
        description="role an SOP step may name instead of the id",
        examples=["pm"],
    )
    persona: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="who this employee is and how they work (goes into every system prompt)",
        examples=["你是团队的产品经理，负责立题、拆解需求和把控节奏。"],
    )
    model: ModelSpec | None = Field(
        default=None,
        description="chat model; empty = the scenario's or the settings' default",
        examples=["simulated"],
    )
    tools: list[ToolName] = Field(
        default_factory=list,
        description=f"tools this employee may call: {', '.join(BUILTIN_TOOLS)}",
        examples=[["read_file", "write_file"]],
    )
    prompt_template: str | None = Field(
        default=None,
        max_length=MAX_LABEL_CHARS,
        description="jinja2 system prompt file, relative to this card's folder",
        examples=["prompts/pm.j2"],
    )
    language: LanguageTag | None = Field(
        default=None,
        description="language of this employee's prompts: en or zh; empty = the language its "
        "persona is written in (cards from before languages were stated keep their Chinese)",
        examples=["en"],
    )

    @field_validator("prompt_template")
    @classmethod
    def _template_exists(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Only a loaded card has a folder to resolve against; cards built in code skip this.
        folder = (info.context or {}).get("folder")
        if value is None or folder is None:
            return value
        path = Path(folder) / value
        if not path.is_file():
            raise spec_error(
                f"prompt template '{value}' not found (looked for {path})",
                "give the path relative to the card's folder, or remove prompt_template "
                "to use the built-in prompt",
            )
        return value

    @property
    def writes_in(self) -> Language:
        """The card's language: stated, else the one its persona is written in."""
        return self.language or main_language(self.persona, default="zh")

    @property
    def prompt_template_path(self) -> Path | None:
        """Absolute-or-relative path of the prompt template file, if the card names one."""
        if self.prompt_template is None:
            return None
        return self.source.parent / self.prompt_template


def load_card(path: str | Path) -> EmployeeCard:
    """Load and validate an employee card; raise :class:`CardError` naming file, line and fix."""
    path = Path(path)
    data, lines = load_yaml_file(path, error_cls=CardError)
    card = validate(
        EmployeeCard,
        data,
        file=path,
        lines=lines,
        error_cls=CardError,
        context={"folder": path.parent},
    )
    _check_template_syntax(card)
    return card


def _check_template_syntax(card: EmployeeCard) -> None:
    # A broken template would otherwise surface only when the employee first speaks.
    template = card.prompt_template_path
    if template is None:
        return
    try:
        parse_string(read_text(template, CardError))
    except jinja2.TemplateSyntaxError as exc:
        raise CardError(
            f"prompt template does not parse: {exc.message}",
            file=template,
            line=exc.lineno,
            field=None,
            fix="close every {{ ... }} and {% ... %} tag; see card "
            f"{card.source}:{card.line_of('prompt_template')}",
        ) from None


__all__ = ["SLUG_PATTERN", "EmployeeCard", "Slug", "ToolName", "load_card"]
