"""Commands the CLI prints for people to type next, runnable as printed.

A hint such as ``staffroom run escalation --room down-1`` typed without the ``--data-dir``,
``--project`` or ``--model`` the person gave would open another data folder, another project
or the simulator, silently. Every hint therefore carries the options of the command being
run that differ from the defaults (:class:`Invocation`), where the hinted command takes them:
hints the CLI writes are built with :meth:`Invocation.command`, and every ``staffroom ...``
in an error's text or fix (written by layers that know nothing of the command line) gets
them inserted by :meth:`Invocation.carry` when the CLI prints it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.markup import escape

from framework.phrases import Language, Phrase
from framework.surfaces.cli.console import LabelConsole

CARRIED = ("--data-dir", "--project", "--model")
"""The options a hint carries over from the command that printed it."""

OWN_MEANING: dict[tuple[str, ...], tuple[str, ...]] = {("init",): ("--model",)}
"""Options a command takes with another meaning (``init --model`` writes the new project's
default model: the project's runs use it without the option)."""

_HINT = re.compile(r"\bstaffroom((?:[ \t]+[a-z][a-z-]*)+)")

CONTINUE_HINT = Phrase(
    en="continue with: {command}",
    zh="继续：{command}",
)
"""After a run that stops where it waits for people."""


class Commands(Protocol):
    """A command of the CLI as typer builds it (a click command: ``params``, and for a group
    ``commands``); typer bundles its own click, so this names only what hints read."""

    @property
    def params(self) -> Sequence[Any]:
        """The command's options and arguments (each with ``opts``)."""
        ...


@dataclass(frozen=True)
class Invocation:
    """The carried options of one ``staffroom`` command as typed (``None``: not given)."""

    data_dir: Path | None = None
    project: Path | None = None
    model: str | None = None
    commands: Callable[[], Commands] | None = field(default=None, compare=False)
    """Builds the CLI's commands (which options each takes), called only when a hint is
    printed (it costs a command a few hundred ms); None: every hint carries them all."""

    @classmethod
    def from_argv(cls, args: Sequence[str], commands: Callable[[], Commands]) -> Invocation:
        """The carried options in a command line (``sys.argv[1:]``), of the command it runs."""
        own = next((o for p, o in OWN_MEANING.items() if tuple(args[: len(p)]) == p), ())
        given: dict[str, str] = {}
        for index, arg in enumerate(args):
            flag, eq, value = arg.partition("=")
            if flag in CARRIED and flag not in own:
                if eq:
                    given[flag] = value
                elif index + 1 < len(args):
                    given[flag] = args[index + 1]
        return cls(
            Path(given["--data-dir"]) if "--data-dir" in given else None,
            Path(given["--project"]) if "--project" in given else None,
            given.get("--model"),
            commands,
        )

    def options(self) -> dict[str, str]:
        """Each carried option given, flag -> value."""
        values = {"--data-dir": self.data_dir, "--project": self.project, "--model": self.model}
        return {flag: str(value) for flag, value in values.items() if value is not None}

    def command(self, *words: str) -> str:
        """``staffroom WORDS...`` and the carried options the command takes, quoted for a
        POSIX shell (a group's own options, ``sop --data-dir D``, after the group's name)."""
        if self.commands is None:
            return shlex.join(["staffroom", *words, *self._unless(set(CARRIED), words)])
        group = self.commands()
        path = command_path(group, words)
        placed = self._placed(group, path, words)
        head = [part for word, extra in zip(path, placed, strict=True) for part in (word, *extra)]
        leaf = placed[-1] if placed else []
        head = head[: len(head) - len(leaf)]
        return shlex.join(["staffroom", *head, *words[len(path) :], *leaf])

    def _unless(self, taken: set[str], given: Sequence[str]) -> list[str]:
        return [
            part
            for flag, value in self.options().items()
            if flag in taken and flag not in given
            for part in (flag, value)
        ]

    def _placed(
        self, group: Commands, path: Sequence[str], given: Sequence[str]
    ) -> list[list[str]]:
        """The options to put after each word of ``path``: each where the deepest command
        on the path takes it (``sop``'s group takes ``--data-dir``, ``run`` itself does)."""
        levels = [accepted(group, path[: i + 1]) for i in range(len(path))]
        placed: list[list[str]] = [[] for _ in path]
        for flag, value in self.options().items():
            at = [i for i, taken in enumerate(levels) if flag in taken]
            if at and flag not in given:
                placed[at[-1]] += [flag, value]
        return placed

    def carry(self, text: str, *, markup: bool = False) -> str:
        """``text`` with the carried options inserted after the command words of every
        ``staffroom ...`` in it (options may come before a command's arguments), skipping
        those the hint gives already; ``markup``: ``text`` is rich markup (values escaped)."""
        if "staffroom" not in text or not self.options() or self.commands is None:
            return text
        group = self.commands()

        def insert(match: re.Match[str]) -> str:
            words = match.group(1).split()
            path = command_path(group, words)
            if not path:
                return match.group(0)
            rest = text[match.end() :].split("\n", 1)[0]
            placed = self._placed(group, path, rest.split())
            parts = ["staffroom"]
            for word, extra in zip(path, placed, strict=True):
                options = shlex.join(extra)
                parts += [word, escape(options) if markup else options]
            parts += words[len(path) :]
            return " ".join(p for p in parts if p)

        return _HINT.sub(insert, text)


class HintConsole(LabelConsole):
    """A console whose printed text carries ``hints``' options into every ``staffroom ...``
    in it (a transcript's "full text: staffroom history ..." too).

    ``labels``: the console whose label language this one follows (the CLI's, which learns
    the project's language only once a command has read its settings)."""

    def __init__(
        self, hints: Invocation, *, labels: LabelConsole | None = None, **kwargs: Any
    ) -> None:
        self._labels = labels
        super().__init__(soft_wrap=True, **kwargs)
        self.hints = hints

    @property
    def language(self) -> Language:
        """The label language: the followed console's, else this one's own."""
        return self._labels.language if self._labels is not None else self._own

    @language.setter
    def language(self, value: Language) -> None:
        self._own = value

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """:meth:`Console.print`, hints completed."""
        markup = kwargs.get("markup") is not False
        carried = [self.hints.carry(o, markup=markup) if isinstance(o, str) else o for o in objects]
        super().print(*carried, **kwargs)


def _sub(command: Commands, word: str) -> Commands | None:
    commands = getattr(command, "commands", None)
    found = commands.get(word) if isinstance(commands, dict) else None
    return found if found is not None and hasattr(found, "params") else None


def command_path(group: Commands, words: Sequence[str]) -> tuple[str, ...]:
    """The command names ``words`` start with (``("sop", "show")``); empty if none."""
    path: list[str] = []
    current = group
    for word in words:
        found = _sub(current, word)
        if found is None:
            break
        path.append(word)
        current = found
    return tuple(path) if path and getattr(current, "commands", None) is None else ()


def accepted(group: Commands, path: Sequence[str]) -> set[str]:
    """The option flags the command at ``path`` takes."""
    current: Commands | None = group
    for word in path:
        current = _sub(current, word) if current is not None else None
    if current is None:
        return set()
    return {opt for param in current.params for opt in param.opts if opt.startswith("--")}


__all__ = [
    "CARRIED",
    "CONTINUE_HINT",
    "Commands",
    "HintConsole",
    "Invocation",
    "accepted",
    "command_path",
]
