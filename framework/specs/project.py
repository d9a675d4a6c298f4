"""A project's folders (``agents/``, ``scenarios/``, ``sop_library/``) and loading them by id.

Loading is tolerant: a file that does not load is kept as its error under every id it may be
meant for (the ``id:`` it declares, and its file name), so one broken file stops only what
uses it. Looking such an id up raises the file's own error, with its line and fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from framework.errors import InputError

from .yaml_loader import load_yaml_file

AGENTS, SCENARIOS, SOPS = "agents", "scenarios", "sop_library"
YAML_SUFFIXES = (".yaml", ".yml")


class Identified(Protocol):
    """A loaded spec: its id, its file, and the line of each field."""

    @property
    def id(self) -> str: ...

    @property
    def source(self) -> Path: ...

    def line_of(self, *path: str | int) -> int | None: ...


S = TypeVar("S", bound=Identified)


@dataclass
class Loaded(Generic[S]):
    """The files of one folder: those that loaded by id, and the errors of those that did not."""

    items: dict[str, S] = field(default_factory=dict)
    broken: dict[str, InputError] = field(default_factory=dict)
    """The error to raise when an id is looked up whose file does not load."""
    problems: list[InputError] = field(default_factory=list)
    """Every file's error, in file order."""


def yaml_files(folder: Path | None) -> list[Path]:
    """Every ``.yaml``/``.yml`` file under ``folder`` (none when it is missing), sorted."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())


def load_by_id(
    folder: Path | None, loader: Callable[[Path], S], error_cls: type[InputError]
) -> Loaded[S]:
    """Load every YAML file in ``folder`` with ``loader``, keeping failures (see the module)."""
    loaded: Loaded[S] = Loaded()
    for path in yaml_files(folder):
        try:
            item = loader(path)
        except InputError as exc:
            _keep(loaded, exc, claimed_ids(path, error_cls))
            continue
        first = loaded.items.get(item.id)
        if first is None:
            loaded.items[item.id] = item
            continue
        error = error_cls(
            f"id '{item.id}' is used twice: also in {first.source}:{first.line_of('id')}",
            file=path,
            line=item.line_of("id"),
            field="id",
            fix="ids must be unique in a folder: rename one of the two",
        )
        _keep(loaded, error, [item.id])
    # An id a broken file claims may be the one meant: it is unusable until that file is fixed.
    for item_id in loaded.broken:
        loaded.items.pop(item_id, None)
    return loaded


def _keep(loaded: Loaded[S], error: InputError, ids: list[str]) -> None:
    loaded.problems.append(error)
    for item_id in ids:
        loaded.broken.setdefault(item_id, error)


def claimed_ids(path: Path, error_cls: type[InputError] = InputError) -> list[str]:
    """The ids a YAML file may be meant for: the ``id:`` it declares, and its name
    (``tech_article.yaml``: ``tech_article`` and ``tech-article``)."""
    found: list[str] = []
    try:
        data, _ = load_yaml_file(path, error_cls=error_cls)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            found.append(data["id"])
    except InputError:
        pass  # not even YAML: the file's name is all there is to go on
    return list(dict.fromkeys([*found, path.stem, path.stem.replace("_", "-")]))


def project_root(scenario_path: Path) -> Path:
    """The project folder of a scenario file: the parent of its ``scenarios/`` folder."""
    folder = scenario_path.parent
    return folder.parent if folder.name == SCENARIOS else folder


def card_project(card_path: Path) -> Path:
    """The project folder of an SOP card: the parent of the ``sop_library/`` folder it is in
    (at any depth), else the card's own folder."""
    library = next((p for p in card_path.parents if p.name == SOPS), None)
    return library.parent if library is not None else card_path.parent


def source_in_project(source: Path, project: Path) -> str:
    """How a room's log records the file of its scenario: relative to ``project`` (POSIX
    separators) when the file is inside it, so the log names no folder of the machine;
    absolute for a file outside the project, which only a command-line run opens and only
    the command line resumes from; as it is when it names no file (a scenario built in
    code)."""
    if not source.is_file():
        return str(source)
    path = source.resolve()
    try:
        return path.relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(path)


__all__ = [
    "AGENTS",
    "SCENARIOS",
    "SOPS",
    "YAML_SUFFIXES",
    "Identified",
    "Loaded",
    "card_project",
    "claimed_ids",
    "load_by_id",
    "project_root",
    "source_in_project",
    "yaml_files",
]
