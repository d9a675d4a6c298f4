"""The room viewer: one page at ``/`` and its few assets under ``/viewer/``.

Served from the package (``viewer/``), never from the data folder: nothing a room writes can
become part of the page. The page needs no token to load; it asks for one and sends it with
every API call (see ``viewer/api.js``). Its content security policy allows only its own
scripts and styles, so even a mistake that put room text into HTML could not run it.

``/viewer/settings.json`` tells the page what the project decides for it: today its
language, so the page's labels follow the project (else the reader's browser). It is resolved
as the CLI resolves its labels' (:func:`~framework.specs.project_file.project_language`):
``$STAFFROOM_LANGUAGE`` (``Settings.language``), else the project's ``staffroom.yaml``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse

from framework.specs.project_file import PROJECT_FILE, ProjectFileError, project_language
from framework.surfaces.server.problems import Problem
from framework.surfaces.server.state import get_state

VIEWER_DIR = Path(__file__).with_name("viewer")
"""The page's files, installed with the package (pyproject package-data)."""

PROJECT_FIX = "run `staffroom validate` on the project and correct what it names"
_MEDIA = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # A new server version must not run against a cached older script.
    "Cache-Control": "no-cache",
}

ASSETS = frozenset(
    p.name for p in VIEWER_DIR.glob("*") if p.suffix in _MEDIA and p.name != "index.html"
)
"""The assets ``/viewer/{name}`` serves (listed once, when the module loads)."""

router = APIRouter(include_in_schema=False)


def _file(name: str) -> FileResponse:
    path = VIEWER_DIR / name
    # Only the files the package ships, by exact name: no path from the request reaches disk.
    if name not in ASSETS or not path.is_file():
        raise Problem(
            404,
            "not_found",
            f"the viewer has no file '{name[:80]}'",
            fix=f"the page is at /; its assets are {', '.join(sorted(ASSETS))}",
        )
    return FileResponse(path, media_type=f"{_MEDIA[path.suffix]}; charset=utf-8", headers=_HEADERS)


@router.get("/")
async def page() -> FileResponse:
    """The room viewer page."""
    return FileResponse(
        VIEWER_DIR / "index.html", media_type="text/html; charset=utf-8", headers=_HEADERS
    )


@router.get("/viewer/settings.json")
async def viewer_settings(request: Request) -> JSONResponse:
    """What the page follows: ``{"language": "en" | "zh" | null}`` (no token needed: it holds
    nothing but the label language). null leaves the choice to each reader's browser.

    Read on each request, so an edited ``staffroom.yaml`` counts from the next page load; a
    broken one is a 400 naming its line (the page then follows the browser; ``staffroom
    serve`` refuses to start on one).
    """
    settings = get_state(request).gateway.staff.settings
    try:
        language = project_language(settings.project_dir, settings.language)
    except ProjectFileError as exc:
        # Anyone may load this page: name the file and line, never the file's own values
        # (nor the server's paths); the operator's `staffroom validate` says the rest.
        where = f"{PROJECT_FILE}:{exc.line}" if exc.line is not None else PROJECT_FILE
        message = f"{where}: the project file is not valid"
        raise Problem(400, "bad_input", message, fix=PROJECT_FIX) from None
    return JSONResponse({"language": language}, headers=_HEADERS)


@router.get("/viewer/{name}")
async def asset(name: str) -> FileResponse:
    """One of the page's scripts or its stylesheet."""
    return _file(name)
