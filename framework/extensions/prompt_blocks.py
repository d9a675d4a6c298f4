"""Registered prompt blocks: text a turn's system prompt carries beyond card, memory and history.

The knowledge layer uses them (an employee's open tasks and goals at the start of its work,
the topics its task type loads); an embedder adds its own with
``staff.extensions.blocks.add(...)``. Each block is capped; a provider that fails with one of
our errors or an ``OSError`` leaves its block out, and the turn records a ``fallback`` event
saying so (the turn goes on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from framework.errors import StaffroomError
from framework.phrases import Phrase
from framework.sessions.keys import SessionKey


@dataclass(frozen=True, slots=True)
class PromptScope:
    """Whose prompt a block is written for."""

    session: SessionKey
    employee: str
    user: str
    """The person this turn serves."""
    scenario: str
    task_type: str | None
    """The scenario's ``settings.task_type`` (writing, auditing, sales...), if it names one."""


BlockProvider = Callable[[PromptScope], str | None]
"""Returns the block's text for a scope, or None (nothing to add)."""


@dataclass(frozen=True, slots=True)
class PromptBlock:
    """A registered block: its heading in the prompt, its provider, its cap."""

    name: str
    title: str | Phrase
    """Its heading: a :class:`Phrase` is written in the prompt's language."""
    provide: BlockProvider
    max_chars: int = 2000


@dataclass(frozen=True, slots=True)
class BlockProblem:
    """A block left out of a prompt, and why."""

    name: str
    reason: str


class PromptBlocks:
    """Registered prompt blocks, rendered in registration order."""

    def __init__(self) -> None:
        self._blocks: dict[str, PromptBlock] = {}

    def add(
        self, name: str, title: str | Phrase, provide: BlockProvider, *, max_chars: int = 2000
    ) -> None:
        """Add a block titled ``title`` (a :class:`Phrase`: in each prompt's language) to every
        turn's system prompt."""
        if name in self._blocks:
            raise ValueError(f"a prompt block named {name!r} is already registered")
        self._blocks[name] = PromptBlock(name, title, provide, max_chars)

    def names(self) -> list[str]:
        """The registered blocks, in the order they render."""
        return list(self._blocks)

    def render(
        self, scope: PromptScope, language: str = "en"
    ) -> tuple[list[dict[str, str]], list[BlockProblem]]:
        """``({"title", "text"} per block with text, blocks left out and why)``; titles in
        ``language`` (the prompt's)."""
        shown: list[dict[str, str]] = []
        problems: list[BlockProblem] = []
        for block in self._blocks.values():
            try:
                text = block.provide(scope)
            except (StaffroomError, OSError) as exc:
                problems.append(BlockProblem(block.name, f"{type(exc).__name__}: {exc}"))
                continue
            if not text or not text.strip():
                continue
            if len(text) > block.max_chars:
                cut = len(text) - block.max_chars
                text = f"{text[: block.max_chars]}\n[… {cut} characters over this block's cap cut]"
            title = block.title(language) if isinstance(block.title, Phrase) else block.title
            shown.append({"title": title, "text": text.strip()})
        return shown, problems
