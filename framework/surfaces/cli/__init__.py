"""The ``staffroom`` command line. Sync only here: one ``asyncio.run`` per command."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from framework.errors import InputError, StaffroomError
from framework.phrases import known_language
from framework.surfaces.cli import knowledge as knowledge_cmds
from framework.surfaces.cli import knowledge_add, knowledge_runs
from framework.surfaces.cli import schedules as schedules_cmds
from framework.surfaces.cli import sop as sop_cmds
from framework.surfaces.cli.console import LabelConsole
from framework.surfaces.cli.hints import Commands, HintConsole, Invocation
from framework.surfaces.cli.migrate import migrate as migrate_cmd
from framework.surfaces.cli.options import (
    DatabaseOption,
    DataDir,
    ModelOption,
    Project,
    label_language,
    settings_for,
)
from framework.surfaces.cli.serve import SERVER_MODULES
from framework.surfaces.cli.serve import serve as serve_cmd

if TYPE_CHECKING:  # pydantic, the spec models and asyncio load when a command runs
    from collections.abc import Coroutine

    from framework.settings import Settings

app = typer.Typer(
    help="Staffroom: digital employees in DMs and group Rooms, driven by versioned SOPs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # else typer coerces a `--help` given to a command (not to `staffroom`) with pydantic
    context_settings={"default_map": {"help": False}},
)
# soft_wrap: piped output keeps one line per event (greppable); labels English until _labelled.
console = LabelConsole(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _console(
    data_dir: Path | None, project: Path | None = None, model: str | None = None
) -> HintConsole:
    """The console of a command given these options: every ``staffroom ...`` it prints
    carries them (see ``cli/hints.py``), so a hint runs as printed."""
    return HintConsole(Invocation(data_dir, project, model, _commands), labels=console)


def _exit_after(job: Coroutine[Any, Any, int]) -> NoReturn:
    """Run the command's coroutine; its result is the exit code."""
    import asyncio

    raise typer.Exit(asyncio.run(job))


@functools.cache
def _commands() -> Commands:
    """The CLI's command tree (built once, when a hint is printed)."""
    return typer.main.get_command(app)


def _labelled(settings: Settings) -> Settings:
    """``settings``, with the console's labels set to the language they name."""
    console.language = label_language(settings)
    return settings


def _settings(data_dir: Path | None, project: Path | None, database: str | None = None) -> Settings:
    return _labelled(settings_for(data_dir, project, database=database))


def _writing(
    command: str,
    data_dir: Path | None,
    project: Path | None,
    model: str | None,
    database: str | None = None,
) -> Settings:
    """Settings for a command that calls models and writes to the data folder: the model
    override is checked, and a read-only folder refused, before anything opens."""
    from framework.stores import require_writable

    settings = settings_for(data_dir, project, model, uses_model=True, database=database)
    require_writable(settings.data_dir, command)
    return _labelled(settings)


@app.command()
def run(
    scenario: Annotated[
        str, typer.Argument(help="Scenario id (from scenarios/) or path to a scenario YAML.")
    ],
    room: Annotated[
        str | None, typer.Option("--room", help="Room id; reuse one to resume it.")
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="Lines people post when the room waits ('author: text')."),
    ] = None,
    interactive: Annotated[
        bool, typer.Option("--interactive", help="Ask on the terminal when the room waits.")
    ] = False,
    message: Annotated[
        str | None,
        typer.Option(
            "--message",
            help="The room's first message, which its first step works on ('author: text' "
            "names who says it; default: the scenario's first human).",
        ),
    ] = None,
    message_file: Annotated[
        Path | None,
        typer.Option("--message-file", help="The first message from a file (all of it)."),
    ] = None,
    data_dir: DataDir = None,
    project: Project = None,
    model: ModelOption = None,
    database: DatabaseOption = None,
) -> None:
    """Run a scenario room and show the transcript live (exit 1 if it stops on a model error)."""
    from framework.surfaces.cli.run import FirstMessage, run_scenario

    settings = _writing("run", data_dir, project, model, database)
    first = FirstMessage(message, message_file)
    out = _console(data_dir, project, model)
    ran = run_scenario(settings, scenario, room, script, interactive, out, first)
    _exit_after(ran)


@app.command()
def dm(
    employee: Annotated[str, typer.Argument(help="Employee id, e.g. pm.")],
    user: Annotated[str, typer.Option("--user", help="Who you are in this chat.")] = "user",
    data_dir: DataDir = None,
    project: Project = None,
    model: ModelOption = None,
    database: DatabaseOption = None,
) -> None:
    """Chat one to one with an employee (reads stdin lines when not a terminal)."""
    from framework.surfaces.cli.run import run_dm

    settings = _writing("dm", data_dir, project, model, database)
    out = _console(data_dir, project, model)
    _exit_after(run_dm(settings, employee, user, out))


@app.command()
def history(
    session: Annotated[
        str, typer.Argument(help="Session key, e.g. room:launch-42 or dm:alice@pm.")
    ],
    last: Annotated[
        int | None, typer.Option("--last", min=1, help="Only the last N events.")
    ] = None,
    raw: Annotated[bool, typer.Option("--json", help="Print the raw JSONL lines.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Then print new events as they come (Ctrl-C).")
    ] = False,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Print a session's history (``--follow``: and watch it live)."""
    from framework.surfaces.cli.run import show_history

    settings = _settings(data_dir, project)
    out = _console(data_dir, project)
    shown = show_history(settings, session, last, raw, out, follow)
    _exit_after(shown)


@app.command()
def replay(
    session: Annotated[str, typer.Argument(help="Session key, e.g. room:launch-42.")],
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Show a session again, with the SOP version it ran on."""
    from framework.surfaces.cli.run import replay_session

    shown = replay_session(_settings(data_dir, project), session, _console(data_dir, project))
    _exit_after(shown)


@app.command()
def consolidate(
    session: Annotated[
        str, typer.Argument(help="Session key, e.g. room:launch-42 or dm:alice@pm.")
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Fold all but the newest half-window, even below it.")
    ] = False,
    data_dir: DataDir = None,
    project: Project = None,
    model: ModelOption = None,
) -> None:
    """Summarise old turns into HISTORY.md and durable facts into MEMORY.md now.

    Exits 1 when the model could not be called (the extractive summary is written instead).
    """
    from framework.surfaces.cli.memory import consolidate as consolidate_session

    settings = _writing("consolidate", data_dir, project, model)
    out = _console(data_dir, project, model)
    _exit_after(consolidate_session(settings, session, force, out))


@app.command()
def close(
    session: Annotated[
        str, typer.Argument(help="Session key, e.g. room:launch-42 or dm:alice@pm.")
    ],
    data_dir: DataDir = None,
    project: Project = None,
    model: ModelOption = None,
) -> None:
    """End a session now: its session-end work runs (consolidation of all of it, and any
    registered hooks); the next message starts a new session.

    Sessions also end by themselves after `Settings.session_idle` seconds of silence.
    """
    from framework.surfaces.cli.run import close_session

    settings = _writing("close", data_dir, project, model)
    out = _console(data_dir, project, model)
    _exit_after(close_session(settings, session, out))


@app.command()
def memory(
    employee: Annotated[str, typer.Argument(help="Employee id, e.g. pm.")],
    user: Annotated[str, typer.Option("--user", help="Whose memory.")] = "user",
    share: Annotated[
        str | None,
        typer.Option(
            "--share",
            help="Sections rooms with other people may see: comma-separated ids from "
            "identity, project, preferences, facts; 'none' shares nothing (the default).",
        ),
    ] = None,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Print what an employee remembers about a user (MEMORY.md), or set what rooms see."""
    from framework.surfaces.cli.memory import set_shared, show_memory

    settings = _settings(data_dir, project)
    out = _console(data_dir, project)
    if share is not None:
        shared = set_shared(settings, employee, user, share, out)
        _exit_after(shared)
    _exit_after(show_memory(settings, employee, user, out))


@app.command()
def validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders to check (default: the project folder)."),
    ] = None,
    project: Project = None,
    data_dir: DataDir = None,
) -> None:
    """Check scenarios (against the SOP store too), cards, knowledge.yaml, schedules.yaml."""
    from framework.surfaces.cli.validate import validate as validate_paths

    settings, out = settings_for(data_dir, project), _console(data_dir, project)
    # Labelled leniently: a broken staffroom.yaml is one of the problems validate reports.
    console.language = label_language(settings, lenient=True)
    raise typer.Exit(validate_paths(paths or [settings.project_dir], settings, out))


@app.command()
def schema(
    kind: Annotated[
        str | None, typer.Argument(help="employee, scenario, sop_card or schedules (default: all).")
    ] = None,
) -> None:
    """Print JSON Schema for editors."""
    from framework.surfaces.cli.validate import print_schema

    raise typer.Exit(print_schema(kind, console))


@app.command()
def init(
    target: Annotated[Path, typer.Argument(help="New project folder (empty or missing).")],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The project's default model (written to models.yaml); default: simulated.",
        ),
    ] = None,
    language: Annotated[
        str,
        typer.Option(
            "--language", help="en or zh: the language its files and labels are written in."
        ),
    ] = "en",
) -> None:
    """Scaffold a project (employees, a scenario, its SOP, models.yaml) that runs at once."""
    from framework.specs.model_spec import ModelSpec
    from framework.specs.models_file import parse_model_option
    from framework.surfaces.cli.init import init_project

    spec = parse_model_option(model, where="--model") if model else ModelSpec()
    written_in = known_language(language)
    if written_in is None:
        raise InputError(
            f"unknown language {language[:40]!r}", field="--language", fix="use en or zh"
        )
    raise typer.Exit(init_project(target, spec, console, written_in))


@app.command()
def doctor(
    fix: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Move damaged stores aside, start lost ones empty, rebuild rooms from their "
            "logs. Never rewrites a log or a MEMORY.md.",
        ),
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Keep each room's latest checkpoint only, VACUUM.")
    ] = False,
    data_dir: DataDir = None,
    database: DatabaseOption = None,
    project: Project = None,
) -> None:
    """Check a data folder: stores, logs, rooms' checkpoints (size, leases), MEMORY.md files."""
    from framework.surfaces.cli.doctor import doctor as check_data_folder

    settings = _settings(data_dir, project, database=database)
    _exit_after(check_data_folder(settings, fix, _console(data_dir, project), prune))


# `staffroom serve` needs the `server` extra; looked up, not imported (uvicorn is slow to load).
_missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
if _missing:
    _why = f"No module named {_missing[0]!r}"

    def _serve_missing() -> None:
        """Serve rooms over HTTP (needs: pip install 'staffroom[server]')."""
        fix = "pip install 'staffroom[server]'"
        raise InputError(f"staffroom serve needs the server extra ({_why})", fix=fix)

    app.command("serve")(_serve_missing)
else:
    app.command("serve")(serve_cmd)
app.command("migrate")(migrate_cmd)
for _typer, _group in ((sop_cmds.app, "sop"), (schedules_cmds.app, "schedules")):
    app.add_typer(_typer, name=_group)
knowledge_cmds.app.command("add")(knowledge_add.add)
app.add_typer(knowledge_cmds.app, name="knowledge")
for _name in ("trackers", "proposal", "search"):
    app.command(_name)(getattr(knowledge_cmds, _name))
for _name in ("extract", "reflect", "forget"):
    app.command(_name)(getattr(knowledge_runs, _name))


def _error(text: str) -> None:
    """Print an error; a command in its fix carries the options this one was given."""
    hints = Invocation.from_argv(sys.argv[1:], _commands)
    err_console.print(f"[bold red]error:[/] {escape(hints.carry(text))}", highlight=False)


def main() -> None:
    """Console entry point: user mistakes print a clear message (exit 2), never a traceback."""
    try:
        app()
    except InputError as exc:
        _error(exc.render())
        raise SystemExit(2) from None
    except StaffroomError as exc:
        _error(str(exc))
        raise SystemExit(2) from None
    except OSError as exc:
        # The machine said no (permissions, a full disk, a path that is a folder): a person
        # must act on it, and the traceback would hide the one line that says what.
        where = f" ({exc.filename})" if exc.filename else ""
        err_console.print(
            f"[bold red]error:[/] {escape((exc.strerror or str(exc)) + where)}", highlight=False
        )
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
