"""Jinja2 environment for prompts: packaged templates, overridable per employee.

Packaged templates exist once per language, ``templates/<language>/<name>`` (``en``, ``zh``):
a prompt is written whole in the language it asks for, so an English card never gets a
Chinese frame (``tests/prompts/test_template_languages.py`` checks every template).

Every template, packaged or a card's own, renders in the bounded sandbox of
:mod:`framework.prompts.sandbox`; any failure is a :class:`PromptTemplateError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from framework.errors import PromptTemplateError
from framework.phrases import language_or_default
from framework.prompts.sandbox import Sandbox, render_template

PACKAGED = Path(__file__).parent / "templates"


class PromptRenderer:
    """Renders prompt templates; an employee's own template replaces the packaged one."""

    def __init__(self) -> None:
        self._env = Sandbox(loader=jinja2.FileSystemLoader(PACKAGED))

    def render(
        self,
        name: str,
        context: dict[str, Any],
        *,
        language: str,
        override: Path | None = None,
    ) -> str:
        """Render packaged template ``name`` in ``language`` (``en``/``zh``; other tags read
        English), or the file ``override`` (a card's own, in whatever language it is written),
        with ``context``."""
        folder = language_or_default(language)
        label = str(override) if override else f"{folder}/{name}"
        try:
            if override is not None:
                template = self._env.from_string(override.read_text(encoding="utf-8"))
            else:
                template = self._env.get_template(f"{folder}/{name}")
        except jinja2.TemplateSyntaxError as exc:
            raise PromptTemplateError(
                f"template {label}, line {exc.lineno}: {exc.message}"
            ) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptTemplateError(f"template {label} cannot be read: {exc}") from exc
        return render_template(self._env, template, context, label=f"template {label}")
