"""The id index of a session log: which event ids a run of JSONL lines holds, without JSON.

A key is an id's JSON string text between the quotes, as ``Event.to_json`` writes it (plain
ids are their own UTF-8 bytes). ``JsonlLog`` keeps a set of the keys in the part of the file it
has read. Under the lock, an append reads the lines other writers added since and takes their
keys with :func:`plain_keys` (one regex call); anything unusual (a hand-written line, an id
with escapes, a torn tail) goes through :func:`block_keys`, which parses such lines one by one.
"""

from __future__ import annotations

import json
import re

__all__ = ["block_keys", "id_key", "plain_keys"]

# One entry per newline: the id of the line that follows, if it starts as to_json writes it
# and the id has no escapes; b"" otherwise (such lines go through _line_key one by one).
_KEYS = re.compile(rb'\n(?:\{"id":"([^"\\\n]*+)")?')
_PLAIN_ID = re.compile(r"[\w.:@-]+")  # no character JSON would escape


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
