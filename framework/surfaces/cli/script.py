"""Script files for ``staffroom run --script``: read and checked whole before a room runs.

A script holds what people say when the room waits, one line each: ``author: text`` (author
one of the scenario's humans) or plain text, said by the first human. ``#`` starts a comment,
blank lines are skipped, and a literal ``\\n`` inside a line makes a multi-line message.

Every line gets a stable message id (:meth:`ScriptLine.message_id`), derived from the room,
the line number, the author and the text. ``Room.post`` stores an id once and routes it once,
so running the same command again after a kill never posts a line twice, and a second run of
the same script on the same room skips the lines it already posted.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from framework.errors import InputError
from framework.phrases import Phrase

SCRIPT_ID_PREFIX = "script-"
"""Ids of messages posted from a script start with this (``script-<line>-<hash>``)."""

_SEPARATORS = (":", "：")  # ASCII and full-width colon (Chinese keyboards type the latter)
_FORMS = "write 'author: text' (author one of: {humans}) or plain text, one message a line"


class ScriptError(InputError):
    """A ``--script`` file cannot be read, or one of its lines is not a message."""


@dataclass(frozen=True, slots=True)
class ScriptLine:
    """One message of a script file."""

    number: int
    """1-based line number in the file (error messages and the message id use it)."""
    author: str
    """Who says it: one of the scenario's humans."""
    text: str
    """The message, with ``\\n`` escapes turned into line breaks."""

    def message_id(self, room_key: str) -> str:
        """A stable id for this line in ``room_key``: ``script-<line>-<12 hex digits>``.

        The same line of the same script in the same room always gets the same id, so a
        resumed run cannot store it twice; the line number keeps two equal lines apart. The id
        holds only characters the log indexes without escaping (``[\\w.:@-]``).
        """
        key = "\0".join((room_key, str(self.number), self.author, self.text))
        digest = hashlib.sha1(key.encode("utf-8"), usedforsecurity=False).hexdigest()[:12]
        return f"{SCRIPT_ID_PREFIX}{self.number}-{digest}"


def read_script(path: Path) -> list[str]:
    """The lines of a script file; :class:`ScriptError` if it is missing, a folder or not UTF-8.

    Called before anything is opened, so a bad file never leaves a room half-run. A UTF-8 byte
    order mark (Windows editors write one) is dropped; it would otherwise glue itself to the
    first author's name.
    """
    if not path.exists():
        raise ScriptError("no such script file", file=path, field="--script", fix="check the path")
    if not path.is_file():
        raise ScriptError(
            "not a file (a folder?)",
            file=path,
            field="--script",
            fix="name a text file with one 'author: text' line per message",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScriptError(
            f"cannot read it: {exc.strerror or exc}", file=path, field="--script"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ScriptError(
            f"not UTF-8 text (byte {exc.start}: {exc.reason})",
            file=path,
            line=line,
            field="--script",
            fix="save the file as UTF-8 (e.g. iconv -f GBK -t UTF-8 old.txt > new.txt)",
        ) from None
    return text.splitlines()


def parse_script(path: Path, lines: Sequence[str], humans: Sequence[str]) -> list[ScriptLine]:
    """Every message in ``lines`` (read from ``path``), or one :class:`ScriptError` listing
    each line that is not a message, with its ``file:line``. Nothing is posted from a script
    that has such a line, so a run never stops halfway through it."""
    if not humans:  # plain lines would have no one to say them
        raise ScriptError(
            "the scenario has no humans to say the script's lines",
            file=path,
            field="--script",
            fix="list the people in the scenario's humans: [...]",
        )
    found: list[ScriptLine] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed = parse_script_line(line, humans)
        except ValueError as exc:
            bad.append((number, str(exc)))
            continue
        if parsed is not None:
            found.append(ScriptLine(number, *parsed))
    if bad:
        first, why = bad[0]
        more = "".join(f"\n  {path}:{n}: {w}" for n, w in bad[1:])
        raise ScriptError(
            why + more,
            file=path,
            line=first,
            field="--script",
            fix=_FORMS.format(humans=", ".join(humans)) + "; nothing was posted",
        )
    return found


def parse_script_line(line: str, humans: Sequence[str]) -> tuple[str, str] | None:
    """``(author, text)`` of one line; None for a blank or ``#`` comment line.

    ``"author: text"`` (author one of ``humans``) or plain text said by the first human. A
    literal ``\\n`` becomes a line break, so one line can post a multi-line message (e.g. a
    correction and a score). :class:`ValueError` (saying why) for a line that names an author
    but says nothing, or whose text is only spaces and invisible characters: stored, it would
    be a message no one can read.
    """
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    return split_author(stripped, humans, escapes=True)


def split_author(text: str, humans: Sequence[str], *, escapes: bool) -> tuple[str, str] | None:
    """``(author, text)`` of a message that may start ``author:`` (see
    :func:`parse_script_line`); ``escapes``: a literal ``\\n`` is a line break. None when
    ``text`` is empty."""
    text = text.strip().replace("\\n", "\n") if escapes else text.strip()
    if not text:
        return None
    for sep in _SEPARATORS:
        head, found, rest = text.partition(sep)
        if found and head.strip() in humans:
            if is_blank(rest):
                raise ValueError(f"'{head.strip()}' says nothing (no text after '{sep}')")
            return head.strip(), rest.strip()
    if is_blank(text):
        raise ValueError("the message is only spaces, line breaks or invisible characters")
    return humans[0], text


MESSAGE_TWICE = Phrase(
    en="give the first message once",
    zh="第一条消息只能给一次",
)
MESSAGE_EMPTY = Phrase(
    en="the first message is empty",
    zh="第一条消息是空的",
)
MESSAGE_FIX = Phrase(
    en="give --message TEXT or --message-file PATH ('author: text' names who says it)",
    zh="用 --message 文本 或 --message-file 路径（'作者: 文本' 指定说话人）",
)


def read_message(
    text: str | None, path: Path | None, humans: Sequence[str], language: str = "en"
) -> tuple[str, str]:
    """``(author, text)`` of ``run``'s first message: ``--message`` (read as a script line:
    ``\\n`` is a line break) or the whole of ``--message-file`` (as written); either may start
    ``author:`` (one of ``humans``), else the first human says it. Checked before a room
    opens: :class:`ScriptError` naming the option for an empty message or an unreadable file.
    """
    option = "--message-file" if path is not None else "--message"
    fix = MESSAGE_FIX(language)
    if text is not None and path is not None:
        raise ScriptError(MESSAGE_TWICE(language), field=option, fix=fix)
    if path is not None:  # missing, a folder, not UTF-8: said with the file's name
        text = "\n".join(read_script(path)).strip()
    try:
        parsed = split_author(text or "", humans or ["user"], escapes=path is None)
    except ValueError as exc:
        raise ScriptError(str(exc), file=path, field=option, fix=fix) from None
    if parsed is None:
        raise ScriptError(MESSAGE_EMPTY(language), file=path, field=option, fix=fix)
    return parsed


def is_blank(text: str) -> bool:
    """True when ``text`` holds nothing visible: whitespace and format characters only
    (zero-width spaces, joiners, byte order marks)."""
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)


def posted_before_ids(
    script: Sequence[ScriptLine], humans_said: Sequence[tuple[str, str, str]]
) -> int:
    """How many leading script lines a room run before stable ids already holds.

    ``humans_said`` is ``(id, author, text)`` of every human message in the log. Rooms whose
    script lines were posted with random ids (before ids were stable) are matched the old
    way, by content in order, so upgrading never posts a line again; once any line has a
    stable id, ids alone decide (``Room.post`` skips them), and this returns 0.
    """
    if any(mid.startswith(SCRIPT_ID_PREFIX) for mid, _, _ in humans_said):
        return 0
    done = 0
    for line, (_, author, text) in zip(script, humans_said, strict=False):
        if (line.author, line.text) != (author, text):
            break
        done += 1
    return done
