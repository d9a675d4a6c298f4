"""Settings: every knob in one typed place, read from the environment once, at the edge."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from framework.data_folder import DataFolder
from framework.database.url import check_database_url
from framework.errors import InputError
from framework.phrases import Language, known_language
from framework.specs.model_spec import ModelSpec
from framework.specs.models_file import parse_model_option

DEFAULT_DATA_DIR = Path(".staffroom")


class Settings(BaseModel):
    """Runtime settings for one :class:`~framework.staffroom.Staffroom`.

    Nothing reads the environment except :meth:`from_env`, so tests build their own.
    """

    data_dir: Path = DEFAULT_DATA_DIR
    """Root of everything on disk (sessions, workspaces, checkpoints)."""
    project_dir: Path = Path(".")
    """Folder holding ``agents/``, ``scenarios/`` and ``sop_library/``."""
    default_model: ModelSpec = Field(default_factory=ModelSpec)
    """Model for employees whose card and scenario name none: the offline simulator."""
    model_override: ModelSpec | None = None
    """Model for every employee, over scenario and card (``--model`` / ``$STAFFROOM_MODEL``)."""
    context_window: int = 32768
    """Tokens a model holds (prompt + answer) when its spec does not say."""
    max_output_tokens: int = 2048
    """Cap on one answer, in tokens, when the model's spec does not say."""
    message_budget: int = 600
    """Tokens one earlier message may take in a prompt; a longer one is cut (head and tail)."""
    system_share: float = Field(default=0.5, gt=0.05, lt=0.95)
    """Share of the prompt budget the instructions (card, SOP, memory, HISTORY.md) may use."""
    model_retries: int = 2
    """Retries of a transient model failure (connection, timeout, 429, 5xx) before a turn fails."""
    model_backoff: float = 1.0
    """Seconds before the first retry; doubled each time."""
    allow_network: bool = True
    """When False, only offline models and servers on this machine (loopback) may be built;
    tests set this."""
    durability: Literal["turn", "event", "none"] = "turn"
    """When history is fsynced: once per employee turn (default), per event, or never."""
    lock: Literal["flock", "filelock"] = "flock"
    """Inter-process lock for JSONL appends (see benchmarks/README.md for the numbers);
    ``$STAFFROOM_LOCK``. Every writer of one log must use the same kind: the first records it
    next to the log, a writer of the other kind is refused."""
    max_tool_rounds: int = 4
    """Model calls per turn before the tool loop is cut off."""
    run_lock_timeout: float = 60.0
    """Seconds to wait for another process that is running the same room."""
    memory_cap: int = 4000
    """Characters a MEMORY.md may hold; a write past it is refused, never truncated."""
    memory_titles: dict[str, str] | None = None
    """Section titles of MEMORY.md by id (identity, project, preferences, facts), over the
    titles in the file's language (a new file's: its employee's)."""
    history_budget: int = 2000
    """Characters of HISTORY.md (newest lines first) put into each prompt."""
    consolidate_in_background: bool = True
    """Consolidate after each reply (in a background task) when the window is exceeded."""
    session_idle: float = Field(default=1800.0, ge=0)
    """Seconds of silence after which a session (room or DM) has ended: the next message
    first closes it (``session_end`` hooks run), then starts a new one. 0: only
    :meth:`Room.close` ends a session."""
    language: Language | None = None
    """Language of the surfaces' labels (CLI, viewer), over the project's ``staffroom.yaml``
    (``$STAFFROOM_LANGUAGE``; see :func:`framework.specs.project_file.project_language`)."""
    database: str | None = None
    """A PostgreSQL URL (``--database`` / ``$STAFFROOM_DATABASE_URL`` / server.yaml's
    ``database``): checkpoints, the SOP store, the ingest ledger and the servers' shared state
    move there, and rooms are leased to one replica at a time (docs/deployment.md). None:
    SQLite files in the data folder, for one machine."""
    database_pool_size: int = Field(default=10, ge=1, le=500)
    """Connections one process may hold on the database (its connection budget)."""
    lease_seconds: float = Field(default=15.0, gt=0)
    """How long a room's lease lasts without renewal: how soon another replica takes over
    the rooms of one that died (renewed every third of it while held)."""
    sop_auto_extract: bool = True
    """Propose an SOP draft without being asked (an employee reports the task done, or the
    session ends, after work worth keeping; see :mod:`framework.sop.auto_extract`). False turns
    it off for every DM and room; a scenario's ``settings.sop_auto_extract`` for its rooms."""
    scheduler_tick: float = Field(default=5.0, gt=0, le=3600)
    """Seconds between the scheduler's ticks (``staffroom serve``, and the default of
    ``staffroom schedules run --tick``; ``$STAFFROOM_SCHEDULER_TICK``): how late an on-time
    fire may start at most. A fire's claim lasts :data:`~framework.schedules.scheduler.LEASE_TICKS`
    ticks unrenewed, so a shorter tick also means a faster takeover of a dead scheduler's fires."""

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``STAFFROOM_HOME``, ``STAFFROOM_PROJECT``, ``STAFFROOM_MODEL``,
        ``STAFFROOM_LANGUAGE``, ``STAFFROOM_LOCK``, ``STAFFROOM_DATABASE_URL`` and
        ``STAFFROOM_SCHEDULER_TICK``.

        ``STAFFROOM_MODEL`` is the environment form of ``--model``: it overrides every
        employee's model. A bad value of either is an :class:`~framework.errors.InputError`.
        """
        values: dict[str, object] = {}
        if home := os.environ.get("STAFFROOM_HOME"):
            values["data_dir"] = Path(home)
        if project := os.environ.get("STAFFROOM_PROJECT"):
            values["project_dir"] = Path(project)
        model = os.environ.get("STAFFROOM_MODEL")
        if model and overrides.get("model_override") is None:  # --model wins, unread
            values["model_override"] = parse_model_option(model, where="STAFFROOM_MODEL")
        if tag := os.environ.get("STAFFROOM_LANGUAGE", "").strip():
            if (language := known_language(tag)) is None:
                raise InputError(
                    f"unknown language {tag[:40]!r}",
                    field="STAFFROOM_LANGUAGE",
                    fix="set it to en (English) or zh (Chinese), or unset it to use the "
                    "project's staffroom.yaml",
                )
            values["language"] = language
        if lock := os.environ.get("STAFFROOM_LOCK"):
            if lock not in ("flock", "filelock"):
                raise InputError(
                    f"unknown lock kind {lock!r}",
                    field="STAFFROOM_LOCK",
                    fix="set it to flock (the default) or filelock, as the data folder's logs use",
                )
            values["lock"] = lock
        if url := os.environ.get("STAFFROOM_DATABASE_URL", "").strip():
            values["database"] = check_database_url(url, where="STAFFROOM_DATABASE_URL")
        if tick := os.environ.get("STAFFROOM_SCHEDULER_TICK", "").strip():
            values["scheduler_tick"] = _tick(tick)
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls.model_validate(values)
        # Checked here, where every command's settings are made: a file given as the folder
        # would otherwise surface later as "read-only" or "no such session".
        if (problem := DataFolder(settings.data_dir).not_a_folder()) is not None:
            env = overrides.get("data_dir") is None and bool(home)
            raise InputError(
                f"the data folder {problem}",
                field="STAFFROOM_HOME" if env else "--data-dir",
                fix=f"{'set STAFFROOM_HOME to' if env else 'pass --data-dir'} a folder "
                "(one that does not exist yet is made)",
            )
        return settings


def _tick(text: str) -> float:
    """``$STAFFROOM_SCHEDULER_TICK`` as seconds (0 < s <= 3600)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 3600:  # also false for nan
        raise InputError(
            f"STAFFROOM_SCHEDULER_TICK {text[:40]!r} is not a number of seconds",
            field="STAFFROOM_SCHEDULER_TICK",
            fix="set it to the seconds between the scheduler's ticks, above 0 and at most "
            "3600 (e.g. 1 or 0.5), or unset it for the default 5",
        )
    return seconds
