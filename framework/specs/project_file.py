"""``staffroom.yaml`` at a project's root (optional): settings of the project as a whole.

::

    language: en              # labels of the CLI and the viewer: en or zh
    timezone: Europe/Berlin   # IANA name: schedules' default zone (default: UTC)
    reflection_time: "09:00"  # local time reflection triggers fall due on their day

A missing file means the defaults. ``language`` is the project's default for what the
surfaces print (``$STAFFROOM_LANGUAGE`` wins over it); what a room writes follows its scenario
and cards (see :func:`framework.language.room_language`). Errors name the file, line and field.
"""

from __future__ import annotations

from datetime import time
from pathlib import Path

from pydantic import Field

from framework.errors import InputError
from framework.phrases import Language

from .employee import LanguageTag
from .time_fields import ClockTime, TimeZoneName
from .yaml_loader import SpecModel, load_yaml_file, validate

PROJECT_FILE = "staffroom.yaml"


class ProjectFileError(InputError):
    """``staffroom.yaml`` is malformed."""


class ProjectFile(SpecModel):
    """What ``staffroom.yaml`` says."""

    language: LanguageTag | None = Field(
        default=None,
        description="language of the CLI's and the viewer's labels: en or zh "
        "($STAFFROOM_LANGUAGE wins; empty: English, the viewer the browser's)",
        examples=["en"],
    )
    timezone: TimeZoneName | None = Field(
        default=None,
        description="IANA time zone of the project: schedules without their own, and "
        "reflection triggers (empty: UTC)",
        examples=["Europe/Berlin"],
    )
    reflection_time: ClockTime = Field(
        default=time(9, 0),
        json_schema_extra={"default": "09:00"},  # as written in the file
        description="local time (HH:MM, the project's time zone) at which a reflection "
        "trigger falls due on its day",
        examples=["09:00"],
    )


def load_project_file(project: str | Path) -> ProjectFile:
    """``staffroom.yaml`` of the project folder ``project``; a missing or empty file gives the
    defaults, a broken one a :class:`ProjectFileError` naming file, line, field and fix."""
    path = Path(project) / PROJECT_FILE
    if not path.is_file():
        return ProjectFile()
    data, lines = load_yaml_file(path, error_cls=ProjectFileError)
    if data is None:
        return ProjectFile()
    return validate(ProjectFile, data, file=path, lines=lines, error_cls=ProjectFileError)


def project_language(project: str | Path, stated: Language | None = None) -> Language | None:
    """The language a project's surfaces label things in: ``stated`` (the environment's,
    ``Settings.language``), else the project file's; None when neither says."""
    return stated or load_project_file(project).language


__all__ = [
    "PROJECT_FILE",
    "ProjectFile",
    "ProjectFileError",
    "load_project_file",
    "project_language",
]
