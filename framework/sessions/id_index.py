"""The id index of a session log: which event ids a run of JSONL lines holds, without JSON.

A key is an id's JSON string text between the quotes, as ``Event.to_json`` writes it (plain
ids are their own UTF-8 bytes). ``JsonlLog`` keeps a set of the keys in the part of the file it
has read. Under the lock, an append reads the lines other writers added since and takes their
keys with :func:`plain_keys` (one regex call); anything unusual (a hand-written line, an id
with escapes, a torn tail) goes through :func:`block_keys`, which parses such lines one by one.

A log written under room leases (``log_fence.py``) carries epochs: :func:`fenced_keys` keeps
the highest epoch seen so far and leaves out the ids of stale lines (an epoch below it), so
that a new lease holder's re-run of a step is written rather than skipped as a duplicate of
a line every reader drops. It reads the epoch from the line's head (``{"id":"…","epoch":3``,
or a marker ``{"epoch":3,"mark":"lease"``) and parses the lines that carry ``"epoch":``
elsewhere. In a log with no epoch so far the one-regex path stays as it was: the regex
itself sends a line with an epoch at its head to the per-line path (a lookahead costs next
to nothing, where a substring search of the block cost a third of the regex's time). The
one line it cannot tell apart is a hand-written one that copies to_json's head
``{"id":"…",`` exactly but puts its epoch further on: write such a line with the epoch right
after the id, or in any other shape (then it is parsed).
"""

from __future__ import annotations

import json
import re

from framework.sessions.log_fence import marker_epoch

__all__ = ["block_keys", "fenced_keys", "id_key", "line_head", "plain_keys"]

_EPOCH = b'"epoch":'

# One entry per newline: the id of the line that follows, if it starts as to_json writes it,
# the id has no escapes and no epoch follows it; b"" otherwise (such lines are parsed one by
# one; a fenced line, or a takeover marker, then gives its epoch to fenced_keys).
_KEYS = re.compile(rb'\n(?:\{"id":"([^"\\\n]*+)"(?!,"epoch":))?')
_PLAIN_ID = re.compile(r"[\w.:@-]+")  # no character JSON would escape
# A line's head as to_json or mark_line write it: the id and the epoch right after it, or a
# marker's epoch. The lookahead keeps "epoch":3.5 from reading as 3.
_HEAD = re.compile(
    rb'\{"(?:id":"([^"\\\n]++)"(?:,"epoch":(\d++)(?=[,}]))?|epoch":(\d++),"mark":"lease")'
)


def plain_keys(block: bytes) -> list[bytes] | None:
    """The keys of ``\\n`` + whole lines, if every line starts as to_json writes it; else None."""
    if block[:1] != b"\n" or block[-1:] != b"\n":
        return None
    found = _KEYS.findall(block)
    found.pop()  # the entry for the newline that ends the block
    return None if b"" in found else found


def block_keys(block: bytes, end: int) -> list[bytes]:
    """The keys of the lines in ``block[:end]``: ``\\n`` + whole lines ending in ``\\n``."""
    found = _KEYS.findall(block, 0, end)
    found.pop()  # the entry for the newline that ends the block
    if b"" in found:  # some line not in to_json's shape: parse just those
        pairs = zip(block[1 : end - 1].split(b"\n"), found, strict=True)
        found = [key for raw, simple in pairs if (key := simple or _line_key(raw))]
    return found


def id_key(event_id: str) -> bytes:
    """The index key of an id: its JSON string text without quotes, as ``to_json`` writes it."""
    if _PLAIN_ID.fullmatch(event_id):  # written unescaped: its UTF-8 bytes are its key
        return event_id.encode()
    return json.dumps(event_id, ensure_ascii=False)[1:-1].encode()


def _line_key(line: bytes) -> bytes | None:
    """The index key of a line's id, parsing the JSON; None when the line has no id."""
    try:  # a hand-written line (spaces, another key order) or an id with escapes
        data = json.loads(line)
        return id_key(str(data["id"])) if isinstance(data, dict) and "id" in data else None
    except ValueError:
        return None  # blank or malformed; readers report it


def line_head(line: bytes) -> tuple[bytes | None, int]:
    """A line's id key (None for a marker or a line without an id) and epoch (0: none).

    For a marker the epoch is its takeover's; an unreadable line is ``(None, 0)``.
    """
    found = _HEAD.match(line)
    if found is not None:
        key, epoch, mark = found.groups()
        if mark is not None:
            return None, int(mark)
        if epoch is not None:
            return key, int(epoch)
        if _EPOCH not in line:
            return key, 0
    try:  # hand-written, escaped, or an epoch in another place (or only in meta): parse
        data = json.loads(line)
    except ValueError:
        return None, 0  # blank or malformed; readers report it
    if not isinstance(data, dict):
        return None, 0
    mark = marker_epoch(data)
    if mark is not None:
        return None, mark
    epoch = data.get("epoch", 0)
    if "id" not in data or type(epoch) is not int or epoch < 0:
        return None, 0  # not an event readers would keep: no id, and no bar to raise
    return id_key(str(data["id"])), epoch


def fenced_keys(
    block: bytes, end: int, base: int, top: int, rises: list[tuple[int, int]]
) -> tuple[list[bytes], int]:
    """The keys of the non-stale lines in ``block[:end]`` and the highest epoch after them.

    ``block`` is ``\\n`` + whole lines, ``block[0]`` at file offset ``base``; ``top`` is the
    highest epoch before it. Each time the highest epoch goes up, ``(line offset, epoch)`` is
    appended to ``rises`` (what ``tail`` needs to judge a window that starts mid-file).
    """
    if not top:
        found = _KEYS.findall(block, 0, end)
        found.pop()  # the entry for the newline that ends the block
        if b"" not in found:
            return found, 0  # no epoch at any line's head, no odd line: the unfenced path
    keys: list[bytes] = []
    offset = base + 1
    for line in block[1 : end - 1].split(b"\n"):
        key, epoch = line_head(line)
        if epoch > top:
            top = epoch
            rises.append((offset, epoch))
        if key and epoch >= top:
            keys.append(key)
        offset += len(line) + 1
    return keys, top
