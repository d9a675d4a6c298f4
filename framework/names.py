"""One rule for every name that becomes part of a path: people, authors, employees, rooms.

Names arrive from scenario files, chat platforms (``room.post(author=...)``), command-line
flags and model answers, and end up as folder names under the data folder
(``memory/{employee}/{user}/``, ``sessions/{channel}:{chat_id}.jsonl``). Checking them once, at
the edge, with one rule means no input can name a path outside the data folder, hide a NUL
byte in a file name, or collide with ``.``/``..``.
"""

from __future__ import annotations

import re
from typing import TypeGuard

from framework.errors import InputError

# ``\w`` is Unicode-aware, so letters of any script (CJK included), digits and ``_`` pass;
# ``- . @ +`` cover platform ids and e-mail-like names. No ``/``, ``\``, ``:``, spaces or
# control characters can slip in, and a name may not start with ``.``.
_NAME = re.compile(r"[\w@+\-][\w@+\-.]{0,127}")
NAME_FIX = "use 1-128 letters, digits or - _ . @ + (not starting with '.'), e.g. alice or ou_7d8a"


def check_name(value: object, *, field: str) -> str:
    """``value`` if it is a safe name, else :class:`InputError` naming ``field`` and the fix."""
    if not is_name(value):
        raise InputError(f"invalid name {value!r}", field=field, fix=NAME_FIX)
    return value


def is_name(value: object) -> TypeGuard[str]:
    """True when :func:`check_name` would accept ``value``."""
    return isinstance(value, str) and bool(_NAME.fullmatch(value)) and ".." not in value
