"""One SOP step, in the three shapes its layers need; the word "step" means this, nothing else.

- :class:`SopStep` (pydantic): a step as written in an SOP card, validated at the edge
  (``sop_library/`` files, an edit posted to ``/api/sops/{id}/versions``); its
  :meth:`SopStep.to_step` gives
- :class:`Step` (a frozen dataclass): the step every layer above the card reads: the store,
  scoring and revision, rendering (:func:`~framework.specs.sop_text.render_steps`), and a
  room's plan (there with its speakers resolved to employee ids).
- :class:`StepState` (a ``TypedDict``): the snapshot a room stores at entry, in its
  checkpoint and its entry and ``sop_step`` events; the turn brief hands it to the offline
  model too. Stored data: it keeps the keys old checkpoints and logs have.

A step's *number* (1-based, "step 2") is ``n`` in :class:`StepState`; its *index* (0-based)
is a position in a list of steps, never stored in a step (see ``docs/glossary.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .employee import ToolName
from .limits import MAX_LABEL_CHARS, MAX_TEXT_CHARS
from .yaml_loader import spec_error


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a procedure."""

    speakers: tuple[str, ...]
    """Employee ids or roles; several speak in order, or at once when ``parallel``. In a
    room's plan, employee ids only."""
    do: str
    tools: tuple[str, ...] = ()
    fallback: str | None = None
    waits_for_input: bool = False
    parallel: bool = False
    produces: tuple[str, ...] = ()
    """Workspace-relative files the step must leave behind (non-empty) for a run to succeed."""


class SopStep(BaseModel):
    """One step: who speaks, what they do, with which tools, what it must leave in the
    workspace, and what to do if it fails."""

    model_config = ConfigDict(extra="forbid")

    speaker: str | list[str] = Field(
        description="employee id or role; a list names several speakers", examples=["pm"]
    )
    do: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="what the speaker does in this step",
        examples=["立题与提纲"],
    )
    tools: list[ToolName] = Field(default_factory=list, examples=[["write_file"]])
    produces: list[str] = Field(
        default_factory=list,
        description="workspace files (relative paths) the step must leave behind, non-empty; "
        "a run whose completed steps did not produce them is not a success",
        examples=[["outline.md"]],
    )
    fallback: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="what to do when the step cannot be done",
    )
    waits_for_input: bool = Field(default=False, description="the room pauses for a human after it")
    parallel: bool = Field(default=False, description="list speakers work at the same time")

    @field_validator("speaker", mode="before")
    @classmethod
    def _speaker_shape(cls, value: Any) -> Any:
        # Checked by hand so a wrong shape gets one clear message, not one per union branch.
        fix = "write one id (`speaker: pm`) or a list (`speaker: [designer, reviewer]`)"
        if isinstance(value, str):
            if not value.strip():
                raise spec_error("speaker is empty", fix)
            if len(value) > MAX_LABEL_CHARS:
                raise spec_error(f"speaker is over {MAX_LABEL_CHARS} characters", fix)
            return value
        if isinstance(value, list):
            if not value:
                raise spec_error("speaker list is empty", fix)
            for index, item in enumerate(value):
                if not isinstance(item, str) or not item.strip() or len(item) > MAX_LABEL_CHARS:
                    raise spec_error(
                        f"speaker {str(item)[:40]!r} is not an employee id or role",
                        fix,
                        at=(index,),
                    )
            return value
        raise spec_error(f"expected an employee id or a list of them, got {value!r}", fix)

    @field_validator("produces")
    @classmethod
    def _produces_paths(cls, value: list[str]) -> list[str]:
        # The same rules the workspace applies to tool paths, caught when the card is loaded
        # rather than at the end of a run.
        fix = "name a file inside the room's workspace, e.g. `produces: [outline.md]`"
        for index, item in enumerate(value):
            posix, windows = PurePosixPath(item), PureWindowsPath(item)
            if not item.strip():
                raise spec_error("product path is empty", fix, at=(index,))
            if len(item) > MAX_LABEL_CHARS:
                raise spec_error(
                    f"product path is over {MAX_LABEL_CHARS} characters", fix, at=(index,)
                )
            if posix.is_absolute() or windows.is_absolute() or windows.drive or item[0] in "/\\":
                raise spec_error(f"product path {item!r} is absolute", fix, at=(index,))
            if ".." in posix.parts or ".." in windows.parts:
                raise spec_error(
                    f"product path {item!r} leaves the workspace ('..')", fix, at=(index,)
                )
            if item.endswith(("/", "\\")) or posix.name in ("", "."):
                raise spec_error(f"product path {item!r} is a folder, not a file", fix, at=(index,))
        return value

    @property
    def speakers(self) -> list[str]:
        """The speaker(s) as a list."""
        return list(self.speaker) if isinstance(self.speaker, list) else [self.speaker]

    def to_step(self) -> Step:
        """The step as code reads it, past the card."""
        return Step(
            speakers=tuple(self.speakers),
            do=self.do,
            tools=tuple(self.tools),
            fallback=self.fallback,
            waits_for_input=self.waits_for_input,
            parallel=self.parallel,
            produces=tuple(self.produces),
        )


class StepState(TypedDict):
    """A step as a room stores it (checkpoint, entry and ``sop_step`` events, turn brief)."""

    n: int
    """The step's 1-based number as people see it."""
    speakers: list[str]
    do: str
    tools: list[str]
    fallback: str | None
    waits_for_input: bool
    parallel: bool
    produces: NotRequired[list[str]]
    """Absent in checkpoints and logs from before steps declared products: read it with
    ``step.get("produces") or []``."""


def step_state(number: int, step: Step) -> StepState:
    """``step`` as a room stores it, numbered ``number`` (1-based)."""
    return {
        "n": number,
        "speakers": list(step.speakers),
        "do": step.do,
        "tools": list(step.tools),
        "fallback": step.fallback,
        "waits_for_input": step.waits_for_input,
        "parallel": step.parallel,
        "produces": list(step.produces),
    }


__all__ = ["SopStep", "Step", "StepState", "step_state"]
