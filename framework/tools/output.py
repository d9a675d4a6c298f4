"""Tool output governance: a model sees at most ``budget`` characters of any tool result.

A result within budget is shown as is. A longer one is saved whole in the session workspace
(``tool-outputs/<call_id>-<tool>.txt``) and the model sees a digest instead: the head, a marker
line that says how much was left out, the file and how to page it back with ``read_file``, then
the tail. Text the model is quoting from the previous output (``protect``) stays verbatim: a
digest that drops the very line under discussion makes the model guess. The raw result is kept
in the session JSONL, so replay never depends on what was shown here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from framework.errors import StorageError
from framework.sessions.workspace import Workspace

__all__ = [
    "DEFAULT_BUDGET",
    "KEPT_LABEL",
    "GovernedOutput",
    "govern",
    "model_view",
    "quoted_snippets",
]

DEFAULT_BUDGET = 4000
KEPT_LABEL = "[kept: quoted] "
SPILL_DIR = "tool-outputs"
MIN_PROTECTED = 8  # shorter quotes match by accident too often to be worth budget
_CONTEXT = 80  # at most this many characters of context on each side of a kept quote
_READ_LIMIT_MAX = 20_000  # read_file refuses larger pages
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_QUOTE_SPLIT = re.compile(r"[「」“”\"'`\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_EDGE = " \t.,;:!?，。；：！？、()[]（）【】*->#"  # bullets and sentence marks around a quote

# A kept stretch of the output: [start, end) and whether it is a quote window of its own
# (labelled) rather than the head or tail.
_Segment = tuple[int, int, bool]


@dataclass(frozen=True)
class GovernedOutput:
    """What the model sees of one tool result.

    ``shown`` is never longer than the budget. ``spilled_path`` is the workspace-relative
    file holding the whole output when it was too long (else ``None``); ``size`` is
    ``len(output)``; ``trimmed`` tells whether ``shown`` differs from the output.
    """

    shown: str
    spilled_path: str | None
    size: int
    trimmed: bool


def govern(
    output: str,
    *,
    budget: int = DEFAULT_BUDGET,
    workspace: Workspace,
    tool: str,
    call_id: str,
    protect: Sequence[str] = (),
) -> GovernedOutput:
    """Fit ``output`` into ``budget`` characters, spilling it whole to ``workspace`` if needed.

    Every snippet in ``protect`` of at least 8 characters that occurs in the output is kept
    verbatim (first occurrence, with a little context), before head and tail get any budget;
    when they cannot all fit, as many whole snippets as fit are kept, earlier ones first.
    Deterministic: the same inputs give the same ``shown`` and the same file.
    Raises ``ValueError`` for a budget below 1 and ``StorageError`` if the file cannot be written.
    """
    if budget < 1:
        raise ValueError("budget must be at least 1 character")
    size = len(output)
    if size <= budget:
        return GovernedOutput(shown=output, spilled_path=None, size=size, trimmed=False)
    path = f"{SPILL_DIR}/{_safe(call_id, 'call')}-{_safe(tool, 'tool')}.txt"
    try:
        workspace.write_text(path, output)
    except OSError as exc:
        raise StorageError(f"cannot save the full output of {tool!r} to {path}: {exc}") from exc
    cores = _protected_spans(output, protect)
    shown = _Digest(output, budget, path).build(cores)
    return GovernedOutput(shown=shown, spilled_path=path, size=size, trimmed=True)


def quoted_snippets(model_text: str, previous_output: str, *, min_len: int = 8) -> list[str]:
    """Pieces of ``model_text`` the model quotes from ``previous_output``, to pass as ``protect``.

    Candidates are the whole lines of ``model_text`` and its pieces between quote marks
    (「」“”"'`) and line breaks, stripped of blanks (and, failing that, of bullets and
    sentence marks). Those of at least ``min_len`` characters found in ``previous_output`` are
    returned in order of appearance, without any that is part of a longer one returned.
    """
    found: list[str] = []
    for raw in [*model_text.splitlines(), *_QUOTE_SPLIT.split(model_text)]:
        for piece in (raw.strip(), raw.strip(_EDGE)):
            if len(piece) >= max(min_len, 1) and piece in previous_output:
                if piece not in found:
                    found.append(piece)
                break
    maximal = [s for s in found if not any(s != other and s in other for other in found)]
    return sorted(maximal, key=lambda s: (model_text.find(s), -len(s), s))


def _safe(name: str, fallback: str) -> str:
    # The name becomes part of a file name: keep it portable and short enough for any disk.
    return _UNSAFE.sub("_", name)[:80] or fallback


def _protected_spans(output: str, protect: Sequence[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for snippet in dict.fromkeys(protect):
        if len(snippet) >= MIN_PROTECTED and (start := output.find(snippet)) >= 0:
            spans.append((start, start + len(snippet)))
    return spans


class _Digest:
    """Lays out head, kept quotes and tail of one output, with a marker for each gap."""

    def __init__(self, output: str, budget: int, path: str) -> None:
        self.output, self.budget, self.path = output, budget, path
        self.size = len(output)
        self.compact = False

    def build(self, cores: list[tuple[int, int]]) -> str:
        kept = self._fit(cores)
        if len(kept) < len(cores) or len(self.render(0, 0, kept)) > self.budget:
            # Quotes matter more than wordy markers: retry with short ones before dropping any.
            self.compact = True
            kept = self._fit(cores)
        if len(self.render(0, 0, kept)) > self.budget:
            # Only with nothing kept: not even one marker fits. Point at the file, however cut.
            return f"[{self.size} chars: {self.path}]"[: self.budget]
        windows = self._with_context(kept, self.budget - len(self.render(0, 0, kept)))
        if len(self.render(0, 0, windows)) > self.budget:
            windows = kept  # context changed the marker offsets' digits; quotes come first
        spare = self.budget - len(self.render(0, 0, windows))
        head, tail = spare - spare // 2, spare // 2
        while True:
            text = self.render(head, tail, windows)
            over = len(text) - self.budget
            if over <= 0:
                return text
            # Longer head/tail can lengthen marker offsets by a digit or two; shrink and retry.
            # At head = tail = 0 this is the layout measured above, so the loop ends.
            total = max(0, head + tail - over)
            head, tail = total - total // 2, total // 2

    def _fit(self, cores: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The cores that fit with nothing else shown, taken greedily in the given order."""
        kept: list[tuple[int, int]] = []
        for core in cores:
            if len(self.render(0, 0, [*kept, core])) <= self.budget:
                kept.append(core)
        return kept

    def render(self, head: int, tail: int, windows: list[tuple[int, int]]) -> str:
        """The digest with about ``head``/``tail`` characters at the ends and these windows."""
        parts: list[str] = []
        pos, first_gap = 0, True
        for start, end, quoted in [*self._segments(head, tail, windows), (self.size, 0, False)]:
            if start > pos:
                parts.append(self._marker(pos, start, first_gap))
                first_gap = False
            if end > start:
                parts.append((KEPT_LABEL if quoted else "") + self.output[start:end])
            pos = max(pos, end)
        text = ""
        for part in parts:  # every marker on a line of its own
            text += ("\n" if text and not text.endswith("\n") else "") + part
        return text

    def _segments(self, head: int, tail: int, windows: list[tuple[int, int]]) -> list[_Segment]:
        raw: list[_Segment] = [(start, end, True) for start, end in windows]
        if (head_end := self._head_end(head)) > 0:
            raw.append((0, head_end, False))
        if (tail_start := self._tail_start(tail)) < self.size:
            raw.append((tail_start, self.size, False))
        merged: list[_Segment] = []
        for start, end, quoted in sorted(raw):
            if merged and start <= merged[-1][1]:
                last = merged[-1]
                merged[-1] = (last[0], max(last[1], end), last[2] and quoted)
            else:
                merged.append((start, end, quoted))
        return merged

    def _marker(self, start: int, end: int, first: bool) -> str:
        gap = end - start
        # read_file reads with universal newlines, so each "\r\n" before us is one character.
        offset = start - self.output.count("\r\n", 0, start)
        if not first:
            word = "" if self.compact else " characters"
            return f"[… {gap}{word} omitted, offset {offset} …]"
        limit = min(gap, self.budget, _READ_LIMIT_MAX)
        said = "omitted:" if self.compact else "characters omitted; full output:"
        page = f"offset={offset}" if self.compact else f"offset={offset}, limit={limit}"
        return f'[… {gap} of {self.size} {said} read_file(path="{self.path}", {page}) …]'

    def _head_end(self, length: int) -> int:
        if length <= 0:
            return 0
        newline = self.output.rfind("\n", 0, length)
        # End on a whole line unless that would throw away more than half of the head.
        return newline + 1 if newline != -1 and newline + 1 >= length // 2 else length

    def _tail_start(self, length: int) -> int:
        if length <= 0:
            return self.size
        start = self.size - length
        if self.output[start - 1] == "\n":
            return start
        newline = self.output.find("\n", start, self.size - length // 2)
        return newline + 1 if newline != -1 else start

    def _with_context(self, cores: list[tuple[int, int]], spare: int) -> list[tuple[int, int]]:
        if not cores:
            return []
        # Context is a courtesy: a quarter of what is left, so head and tail still show.
        reach = min(_CONTEXT, spare // (4 * len(cores)))
        windows: list[tuple[int, int]] = []
        for start, end in cores:
            left, right = max(0, start - reach), min(self.size, end + reach)
            if left > 0 and self.output[left - 1] != "\n":
                newline = self.output.find("\n", left, start)
                left = newline + 1 if newline != -1 else left
            newline = self.output.rfind("\n", end, right)
            right = newline + 1 if newline != -1 else right
            windows.append((left, right))
        return windows


def model_view(result: Mapping[str, Any], call_event_id: str, workspace: Workspace) -> str:
    """The text a model was shown for a tool result (spilling the full output if long)."""
    return govern(
        str(result["output"]),
        budget=int(result["budget"]),
        workspace=workspace,
        tool=str(result["name"]),
        call_id=call_event_id,
        protect=list(result.get("protect") or []),
    ).shown
