"""Why a MEMORY.md write is refused: the file is not UTF-8, or the change is over the cap.

Both answers name what fixes them (the ``iconv`` line; what to merge or drop), since the
first is read by a person and the second by the model that tried the write.
"""

from __future__ import annotations

import heapq
import shlex
from collections.abc import Callable
from pathlib import Path

from framework.errors import InputError
from framework.memory.entries import SECTION_IDS, MemoryChange, MemoryDoc


def not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError) -> InputError:
    """Why a MEMORY.md that is not UTF-8 is never written (and the iconv that fixes it)."""
    quoted = shlex.quote(str(path))
    line = data.count(b"\n", 0, exc.start) + 1
    # GBK is what people here save by mistake; name it when the bytes fit it.
    source = "GBK" if _decodes(data, "gbk") else "<its encoding>"
    tmp = shlex.quote(f"{path}.utf8")
    return InputError(
        f"this MEMORY.md is not UTF-8 ({exc.reason} at byte {exc.start}, line {line}); "
        "rewriting it would lose what does not decode, so memory writes to it are refused "
        "(the file is never changed)",
        file=path,
        fix=f"convert it to UTF-8: iconv -f {source} -t UTF-8 {quoted} > {tmp} && "
        f"mv {tmp} {quoted}",
    )


def cap_message(
    cap: int,
    sections: dict[str, list[str]],
    old_text: str,
    new_text: str,
    change: MemoryChange,
    render: Callable[[MemoryDoc], str],
) -> str:
    """Why a change would overflow MEMORY.md, and what to merge or drop to make room."""
    sizes = {s: sum(len(e) + 1 for e in sections[s]) for s in SECTION_IDS}
    largest = max(SECTION_IDS, key=sizes.__getitem__)
    longest = heapq.nlargest(3, ((len(e), e, s) for s in SECTION_IDS for e in sections[s]))
    cut = [(s, e if n <= 60 else e[:60] + "…", n) for n, e, s in longest]
    named = "; ".join(f"[{s}] {e!r} ({n} chars)" for s, e, n in cut) or "none"
    entry = change.new or ""
    if len(entry) + len(render(MemoryDoc())) > cap:
        # No merging of old entries can make room: the entry itself is the problem.
        return (
            f"MEMORY.md cannot take this entry: it is {len(entry):,} characters and the "
            f"file may hold {cap:,} in all, even empty. Nothing was "
            f"written. Store a one-line summary of it instead (memory entries are short "
            f"facts, not documents); long material belongs in a workspace file."
        )
    return (
        f"MEMORY.md is full: this change to {change.section} would make it "
        f"{len(new_text):,} characters, over the cap of {cap:,} (it is "
        f"{len(old_text):,} now). Nothing was written. Make room first, then retry: merge "
        f"related entries into one short line with `replace`, drop stale ones with `remove`, "
        f"or shorten the new entry. Largest section: {largest} ({sizes[largest]:,} characters, "
        f"entries: {len(sections[largest])}). Longest entries: {named}."
    )


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True
