"""Keys of PostgreSQL's two-key advisory locks on named things (an SOP, a room's queue).

The first key is a class, one per kind of thing locked (each owner declares its own); the
second is :func:`name_key` of the thing's name. Two names whose keys collide only wait for
each other, which is safe.
"""

from __future__ import annotations

import zlib

__all__ = ["name_key"]


def name_key(name: str) -> int:
    """The second advisory-lock key of ``name``: its CRC-32 as a signed 32-bit integer."""
    return zlib.crc32(name.encode("utf-8")) - 2**31
