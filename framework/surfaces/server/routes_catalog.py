"""``/api/scenarios``, ``/api/employees``, ``/api/knowledge/search``: what a bot can offer.

The catalog is the project's (``agents/``, ``scenarios/``) as the server opened it; files that
did not load are listed with their error, so a bot can say why a scenario is missing.
Knowledge search is the same BM25 search as ``staffroom search`` (files synced first).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from framework.errors import InputError
from framework.knowledge.documents import Partition
from framework.names import check_name
from framework.surfaces.server.auth import Principal, require
from framework.surfaces.server.problems import ERROR_RESPONSES
from framework.surfaces.server.state import get_state

router = APIRouter(prefix="/api", tags=["catalog"], responses=ERROR_RESPONSES)


class ScenarioInfo(BaseModel):
    """A scenario a room can run."""

    id: str
    title: str
    description: str
    participants: list[str]
    humans: list[str]
    double_texting: str


class EmployeeInfo(BaseModel):
    """An employee a DM or a room can have."""

    id: str
    display_name: str
    role: str


class Broken(BaseModel):
    """A file that did not load, and why."""

    file: str | None
    line: int | None
    message: str
    fix: str | None


def _broken(errors: Mapping[str, InputError]) -> list[Broken]:
    """The files that did not load, as the answer shows them."""
    return [Broken(file=e.file, line=e.line, message=e.message, fix=e.fix) for e in errors.values()]


class Scenarios(BaseModel):
    """The project's scenarios."""

    scenarios: list[ScenarioInfo]
    broken: list[Broken]


class Employees(BaseModel):
    """The project's employees."""

    employees: list[EmployeeInfo]
    broken: list[Broken]


class HitInfo(BaseModel):
    """One search hit."""

    doc: str
    source: str
    title: str
    score: float
    snippet: str


class SearchHits(BaseModel):
    """Ranked hits, or why there are none."""

    query: str
    hits: list[HitInfo]
    no_match_reason: str | None
    ignored: list[str]


@router.get("/scenarios", summary="Scenarios rooms can run")
async def scenarios(request: Request, _: Annotated[Principal, require("read")]) -> Scenarios:
    """Every scenario of the project, by id; broken files with their error."""
    catalog = get_state(request).gateway.staff.catalog
    found = [
        ScenarioInfo(
            id=s.id,
            title=s.title,
            description=s.description,
            participants=list(s.participants),
            humans=list(s.humans),
            double_texting=s.settings.double_texting,
        )
        for s in sorted(catalog.scenarios.values(), key=lambda s: s.id)
    ]
    return Scenarios(scenarios=found, broken=_broken(catalog.broken_scenarios))


@router.get("/employees", summary="Employees of the project")
async def employees(request: Request, _: Annotated[Principal, require("read")]) -> Employees:
    """Every employee card of the project, by id; broken cards with their error."""
    catalog = get_state(request).gateway.staff.catalog
    found = [
        EmployeeInfo(id=c.id, display_name=c.display_name, role=c.role)
        for c in sorted(catalog.employees.values(), key=lambda c: c.id)
    ]
    return Employees(employees=found, broken=_broken(catalog.broken_employees))


@router.get("/knowledge/search", summary="BM25 search over the knowledge layers")
async def search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="Keywords")],
    _: Annotated[Principal, require("knowledge.read")],
    employee: Annotated[
        str | None,
        Query(max_length=128, description="Search as this employee (what it may read)"),
    ] = None,
    partition: Annotated[Partition, Query(description="open, or isolated")] = Partition.OPEN,
    limit: Annotated[int, Query(ge=1, le=50)] = 5,
) -> SearchHits:
    """What ``employee`` may find (without it: everything open, as ``staffroom search``)."""
    staff = get_state(request).gateway.staff
    if employee is not None:
        check_name(employee, field="employee")
        staff.catalog.employee(employee)  # an unknown one is a 404 naming the ids there are
    found = await staff.knowledge.search(q, employee=employee, partition=partition, limit=limit)
    hits = [
        HitInfo(
            doc=h.doc_id,
            source=_inside(h.source, staff.settings.data_dir),
            title=h.title,
            score=round(h.score, 4),
            snippet=h.snippet,
        )
        for h in found.hits
    ]
    return SearchHits(
        query=q, hits=hits, no_match_reason=found.no_match_reason, ignored=list(found.ignored)
    )


def _inside(source: str, data_dir: Path) -> str:
    """``source`` relative to the data folder: callers need not learn the server's paths."""
    path = Path(source)
    try:
        return path.resolve().relative_to(data_dir.resolve()).as_posix()
    except ValueError:
        return path.name  # outside the folder (should not happen): the file's name only


__all__ = ["router"]
