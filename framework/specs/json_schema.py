"""JSON Schemas of the files people write, for editors and the CLI's ``schema`` command.

Internal fields (``source``, line maps, an SOP card's markdown ``body``) are not part of the
files, so they are not in the schemas.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .employee import EmployeeCard
from .scenario import Scenario
from .schedules_file import SchedulesFile
from .sop_card import SopCard

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_MODELS: dict[str, tuple[type[BaseModel], str]] = {
    "employee": (EmployeeCard, "An employee card: agents/<id>.yaml"),
    "scenario": (Scenario, "A scenario: scenarios/<id>.yaml"),
    "sop_card": (SopCard, "The YAML front matter of an SOP card: sop_library/<id>/v<N>.md"),
    "schedules": (SchedulesFile, "Schedules: schedules.yaml at the project root"),
}


def schemas() -> dict[str, dict[str, Any]]:
    """``{"employee": ..., "scenario": ..., "sop_card": ..., "schedules": ...}``, each a JSON
    Schema dict."""
    out: dict[str, dict[str, Any]] = {}
    for kind, (model, description) in _MODELS.items():
        schema = model.model_json_schema()
        out[kind] = {"$schema": DIALECT, **schema, "description": description}
    return out


__all__ = ["schemas"]
