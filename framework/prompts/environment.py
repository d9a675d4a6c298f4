"""Jinja2 environment for prompts: packaged templates, overridable per employee."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from framework.errors import PromptTemplateError

PACKAGED = Path(__file__).parent / "templates"


class PromptRenderer:
    """Renders prompt templates; an employee's own template replaces the packaged one."""

    def __init__(self) -> None:
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(PACKAGED),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,  # prompts are plain text, not HTML
        )

    def render(self, name: str, context: dict[str, Any], *, override: Path | None = None) -> str:
        """Render packaged template ``name`` (or the file ``override``) with ``context``."""
        label = str(override) if override else name
        try:
            if override is not None:
                template = self._env.from_string(override.read_text(encoding="utf-8"))
            else:
                template = self._env.get_template(name)
            return template.render(**context)
        except jinja2.UndefinedError as exc:
            raise PromptTemplateError(f"template {label}: {exc.message}") from exc
        except jinja2.TemplateSyntaxError as exc:
            raise PromptTemplateError(f"template {label}:{exc.lineno}: {exc.message}") from exc
        except OSError as exc:
            raise PromptTemplateError(f"template {label} cannot be read: {exc}") from exc
