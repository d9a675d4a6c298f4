"""``knowledge.yaml`` at a project's root (optional): how the knowledge layers are set up.

::

    categories: [learning, strategy, team, customers]   # topic file folders (this is the default)
    isolated:
      readers: [finance, ceo-assistant]   # employees entitled to the isolated library partition
    loading:                              # task type -> what is loaded for it (selective loading)
      writing: [style, positioning]       # topic slugs ...
      auditing: [site-map, "category:strategy"]   # ... or a whole category
      sales: [pricing]
    reflection:
      interval: biweekly                  # default interval of a new reflection trigger

A missing file means the defaults. Unknown keys are refused with a fix, and every error names
the file, the line and the field. Topic names in ``loading`` are stored as slugs
(:func:`topic_slug`, the same rule that names topic files), so ``Site Map`` and ``site-map``
mean the same topic.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from framework.errors import InputError
from framework.names import NAME_FIX, is_name

from ._explain import hint
from .employee import Slug
from .limits import MAX_LABEL_CHARS
from .yaml_loader import SpecModel, load_yaml_file, spec_error, validate

__all__ = [
    "DEFAULT_CATEGORIES",
    "INTERVALS",
    "KNOWLEDGE_FILE",
    "Interval",
    "IsolatedConfig",
    "KnowledgeConfig",
    "KnowledgeFileError",
    "ReflectionDefaults",
    "load_knowledge_file",
    "topic_slug",
]

KNOWLEDGE_FILE = "knowledge.yaml"
DEFAULT_CATEGORIES: tuple[str, ...] = ("learning", "strategy", "team", "customers")
INTERVALS = ("weekly", "biweekly", "monthly")
"""Named intervals; ``<N>d`` (``10d``: every 10 days) is accepted too."""
_EVERY_N_DAYS = re.compile(r"^([1-9]\d{0,3})d$")
_CATEGORY_REF = "category:"
# Han (with extension A and compatibility forms), kana and Hangul.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"


class KnowledgeFileError(InputError):
    """``knowledge.yaml`` is malformed."""


def topic_slug(text: str) -> str:
    """A topic's file name (without ``.md``) from its title; ``""`` when nothing is left.

    NFKC (full-width forms become ASCII), case folded, every run of characters that are not
    letters or digits becomes one ``-``, except between two CJK characters, where it goes
    (Chinese is written without spaces, so ``跳出率 优先级`` and ``跳出率优先级`` are one
    topic); at most 80 characters. Letters of every script are kept: ``Site Map`` is
    ``site-map``, ``AI 写作指南`` is ``ai-写作指南``. The result passes
    :func:`framework.names.check_name`.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    slug = re.sub(r"[\W_]+", "-", folded)
    slug = re.sub(rf"(?<=[{_CJK}])-(?=[{_CJK}])", "", slug)
    return slug.strip("-")[:80].strip("-")


def _interval(value: str) -> str:
    value = value.strip().lower()
    if value not in INTERVALS and not _EVERY_N_DAYS.match(value):
        raise spec_error(
            f"'{value[:40]}' is not an interval{hint(value, INTERVALS)}",
            "write weekly, biweekly, monthly, or a number of days such as 10d (1-9999)",
        )
    return value


Interval = Annotated[str, AfterValidator(_interval)]
"""How often a reflection runs: ``weekly``, ``biweekly``, ``monthly`` or ``<N>d``."""


def _reader(value: str) -> str:
    if not is_name(value):
        raise spec_error(f"{value[:80]!r} is not an employee id", NAME_FIX)
    return value


def _load_ref(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # pydantic reports the wrong type
    if value.strip().startswith(_CATEGORY_REF):
        return _CATEGORY_REF + value.strip().removeprefix(_CATEGORY_REF).strip()
    slug = topic_slug(value)
    if not slug:
        raise spec_error(
            f"{value[:40]!r} names no topic",
            "write a topic slug (style, site-map) or category:<name> (category:strategy)",
        )
    return slug


LoadRef = Annotated[str, BeforeValidator(_load_ref)]
TaskType = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]


class IsolatedConfig(BaseModel):
    """The isolated library partition: who may read it (nobody unless listed)."""

    model_config = ConfigDict(extra="forbid")

    readers: list[Annotated[str, AfterValidator(_reader)]] = Field(
        default_factory=list,
        description="employee ids entitled to read the isolated partition",
        examples=[["finance"]],
    )


class ReflectionDefaults(BaseModel):
    """Defaults for reflection triggers."""

    model_config = ConfigDict(extra="forbid")

    interval: Interval = Field(
        default="biweekly",
        description="weekly, biweekly, monthly or <N>d",
        examples=["biweekly"],
    )


class KnowledgeConfig(SpecModel):
    """A project's knowledge setup (the defaults when it has no ``knowledge.yaml``)."""

    categories: list[Slug] = Field(
        default_factory=lambda: list(DEFAULT_CATEGORIES),
        min_length=1,
        description="folders of topic files",
        examples=[list(DEFAULT_CATEGORIES)],
    )
    isolated: IsolatedConfig = Field(default_factory=IsolatedConfig)
    loading: dict[TaskType, list[LoadRef]] = Field(
        default_factory=dict,
        description="task type -> topic slugs or category:<name> to load for it",
        examples=[{"writing": ["style", "positioning"]}],
    )
    reflection: ReflectionDefaults = Field(default_factory=ReflectionDefaults)

    @model_validator(mode="after")
    def _cross_check(self) -> Self:
        seen: set[str] = set()
        for index, name in enumerate(self.categories):
            if name in seen:
                raise spec_error(
                    f"category '{name}' is listed twice", "list each once", at=("categories", index)
                )
            seen.add(name)
        for task, refs in self.loading.items():
            for index, ref in enumerate(refs):
                category = ref.removeprefix(_CATEGORY_REF)
                if ref.startswith(_CATEGORY_REF) and category not in seen:
                    raise spec_error(
                        f"unknown category '{category}'{hint(category, seen)}",
                        f"use one of: {', '.join(self.categories)}",
                        at=("loading", task, index),
                    )
        return self

    def what_to_load(self, task_type: str) -> list[str]:
        """What to load for ``task_type``: topic slugs and ``category:<name>`` entries.

        The task type is matched exactly, then ignoring case and surrounding spaces; an
        unknown one loads nothing (``[]``).
        """
        if task_type in self.loading:
            return list(self.loading[task_type])
        wanted = task_type.strip().casefold()
        for key, refs in self.loading.items():
            if key.strip().casefold() == wanted:
                return list(refs)
        return []

    def is_isolated_reader(self, employee: str) -> bool:
        """Whether ``employee`` may read the isolated partition."""
        return employee in self.isolated.readers


def load_knowledge_file(path: str | Path) -> KnowledgeConfig:
    """Read ``knowledge.yaml`` at ``path``; a missing (or empty) file gives the defaults.

    Errors are :class:`KnowledgeFileError` naming the file, line, field and fix.
    """
    path = Path(path)
    if not path.exists():
        return KnowledgeConfig().with_source(path, {})
    data, lines = load_yaml_file(path, error_cls=KnowledgeFileError)
    if data is None:
        return KnowledgeConfig().with_source(path, lines)
    return validate(KnowledgeConfig, data, file=path, lines=lines, error_cls=KnowledgeFileError)
