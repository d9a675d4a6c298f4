"""``staffroom --help`` and the commands that need no room start without the LangGraph runtime,
and a help page without the spec machinery (pydantic, yaml, jinja2) or the session layer
(which reads logs) either.

Importing langgraph and langchain was most of the CLI's start-up (see
benchmarks/cli_startup.py); a person typing ``--help`` or ``validate`` waited for a runtime
that never ran, and then for the settings and spec models a help page never reads. This is
about a fresh interpreter's ``sys.modules``, so each check is a real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "fastapi", "uvicorn")
SPECS = ("pydantic", "yaml", "jinja2", "framework.sessions", "aiosqlite")
"""What reading settings and spec files loads: a help page reads neither."""
# Runs the command as the console script does, then says which heavy packages it loaded.
PROBE = """
import sys
sys.argv = ["staffroom", *sys.argv[1:]]
from framework.surfaces.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted(w for w in HEAVY if any(m == w or m.startswith(w + ".") for m in sys.modules))
sys.__stderr__.write(f"\\nLOADED={','.join(loaded)} CODE={code}\\n")
"""


def loaded_by(*args: str, data: Path, watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``watched`` packages ``staffroom ARGS`` imported in a fresh interpreter."""
    probe = f"HEAVY = {watched!r}\n{PROBE}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=ROOT,
        env={**env, "STAFFROOM_HOME": str(data)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("LOADED="), done.stderr
    assert last.endswith(" CODE=0"), done.stderr
    names = last.removeprefix("LOADED=").split(" ")[0]
    return [name for name in names.split(",") if name]


def test_importing_the_cli_loads_no_runtime() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, framework.surfaces.cli\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "[]", done.stderr


HELP_PAGES = [
    ["--help"],
    ["sop", "--help"],
    ["knowledge", "--help"],
    ["doctor", "--help"],
    ["run", "--help"],
    ["serve", "--help"],
]


@pytest.mark.parametrize(
    "args",
    [*HELP_PAGES, ["validate", "scenarios/escalation.yaml"], ["schema", "employee"]],
    ids=" ".join,
)
def test_commands_that_need_no_room_start_without_langgraph(
    args: list[str], tmp_path: Path
) -> None:
    assert loaded_by(*args, data=tmp_path / "data") == []


@pytest.mark.parametrize("args", HELP_PAGES, ids=" ".join)
def test_help_pages_load_no_settings_spec_models_or_session_layer(
    args: list[str], tmp_path: Path
) -> None:
    assert loaded_by(*args, data=tmp_path / "data", watched=SPECS) == []


def test_public_names_still_import_from_the_package() -> None:
    import framework

    for name in framework.__all__:
        assert getattr(framework, name) is not None, name
    assert set(framework.__all__) <= set(dir(framework))
