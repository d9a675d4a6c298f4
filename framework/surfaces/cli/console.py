"""The CLI's rich console that knows which language its labels are in.

Every command module imports it when the app is built, so it stays light: rendering
transcripts (which reads the session layer) is :mod:`framework.surfaces.cli.render`."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from framework.phrases import Language


class LabelConsole(Console):
    """A rich console that knows the language of the labels it prints (the CLI sets it from
    ``$STAFFROOM_LANGUAGE`` or the project's ``staffroom.yaml`` once the settings are read)."""

    def __init__(self, *args: Any, language: Language = "en", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.language: Language = language


def labels_language(console: Console) -> Language:
    """The language ``console`` labels things in (English for a plain console)."""
    return console.language if isinstance(console, LabelConsole) else "en"
