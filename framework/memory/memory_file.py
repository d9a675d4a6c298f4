"""MEMORY.md: what one employee knows about one user, in four sections under a hard cap.

Format (what :meth:`MemoryFile.render` writes; one entry per line)::

    # 用户身份
    姓名: alice
    §
    # 项目上下文
    项目代号: 数字员工平台
    §
    # 个性化偏好
    偏好语言: English
    §
    # 关键事实
    周五 15:00 与设计团队评审

People edit this file by hand, so reading is lenient: anything odd is read as well as possible
and reported in :attr:`MemoryDoc.warnings`; the next write stores the cleaned-up form. Writes
hold the file's lock around read-modify-write (:mod:`framework.file_locks`: ``MEMORY.md.lock``,
or an advisory lock on the database) and replace the file atomically.

Nothing is ever rewritten lossily: a file that is not UTF-8 (saved as GBK, say) is read with
U+FFFD in place of what does not decode, but every write to it is refused
(:attr:`MemoryDoc.write_refusal`, an :class:`~framework.errors.InputError` naming the file and
the ``iconv`` that converts it) and its bytes stay as they are. A MEMORY.md that cannot be
read at all (a folder, no permission) is an ``InputError`` too: a person must fix it.
"""

from __future__ import annotations

import shlex
import stat
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path

from framework.atomic_files import replace_file
from framework.errors import InputError, MemoryCapExceeded, StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.language import is_english
from framework.memory.entries import (
    DEFAULT_TITLES,
    ENGLISH_TITLES,
    SECTION_IDS,
    SEPARATOR,
    MemoryChange,
    MemoryDoc,
    clean_entry,
    section_titles,
)
from framework.memory.fact_log import FactLog, Superseded
from framework.memory.fact_rules import same_fact, superseded_by
from framework.memory.refusals import cap_message, not_utf8
from framework.memory.similarity import Similarity, normalize, normalized_similarity

# The entry types its methods take and give; the rest of ``entries`` is imported from there.
__all__ = ["MemoryChange", "MemoryDoc", "MemoryFile"]

FACTS_FILE = "facts.json"
"""Beside MEMORY.md: sources, confirmation dates, superseded values (see ``fact_log``)."""


class MemoryFile:
    """One MEMORY.md (one employee x one user) at ``path``, capped at ``cap`` characters.

    ``locks``: how its writers exclude each other (default: ``MEMORY.md.lock``)."""

    def __init__(
        self,
        path: Path,
        *,
        cap: int = 4000,
        titles: Mapping[str, str] | None = None,
        similarity: Similarity = normalized_similarity,
        threshold: float = 0.8,
        today: Callable[[], date] = date.today,
        language: str | None = None,
        new_language: str | None = None,
        locks: FileLocks | None = None,
    ) -> None:
        unknown = set(titles or {}) - set(SECTION_IDS)
        if unknown:
            raise InputError(f"unknown section ids in titles: {sorted(unknown)}; use {SECTION_IDS}")
        self.path = Path(path)
        self.cap = cap
        self.language = language
        """The titles' language; None: the file's own, and for a new file ``new_language``."""
        self.new_language = new_language
        """A new file's titles' language (its employee's); None: its first entry's."""
        self.custom_titles = dict(titles or {})
        """Configured titles (``Settings.memory_titles``): they win in either language."""
        self.similarity = similarity
        self.threshold = threshold
        self.today = today
        self.facts = FactLog(self.path.with_name(FACTS_FILE))
        """Where each entry came from, when confirmed, what corrections replaced."""
        self._locks = locks or LocalFileLocks()
        # Titles in either language or the bare id are recognised, so switching the configured
        # language (or a hand-edit) loses nothing; the configured titles win on a clash.
        self._aliases: dict[str, str] = {}
        for names in ({s: s for s in SECTION_IDS}, ENGLISH_TITLES, DEFAULT_TITLES, self.titles):
            self._aliases.update({normalize(title): sid for sid, title in names.items()})
        self._title_language = {normalize(t): "en" for t in ENGLISH_TITLES.values()}
        self._title_language.update({normalize(t): "zh" for t in DEFAULT_TITLES.values()})

    @property
    def titles(self) -> dict[str, str]:
        """Section id -> the title written (the configured language's, Chinese when unset)."""
        return self.titles_in(self.language or "zh")

    def titles_in(self, language: str) -> dict[str, str]:
        """Section id -> title for a file in ``language``, configured titles first."""
        return {**section_titles(language), **self.custom_titles}

    def read(self) -> MemoryDoc:
        """Parse the file; a missing file is empty.

        Raises :class:`InputError` for a file a person must fix (a folder, not readable) and
        :class:`StorageError` when the disk fails. A file that is not UTF-8 is read (with
        U+FFFD) and carries its :attr:`MemoryDoc.write_refusal`.
        """
        data = self._load()
        if data is None:
            return MemoryDoc()
        doc = self._parse(data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            doc.write_refusal = not_utf8(self.path, data, exc)
        return doc

    def _load(self) -> bytes | None:
        """The file's bytes; None when there is no file."""
        moved = "move it away; the employee then starts a new MEMORY.md"
        try:
            # A folder or a FIFO in its place must be named, not read (a FIFO would block).
            if stat.S_ISDIR(mode := self.path.stat().st_mode):
                raise self._unreadable("is a folder, not a file", moved)
            if not stat.S_ISREG(mode):
                raise self._unreadable("is not a regular file", moved)
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except PermissionError as exc:
            how = f"let the user running Staffroom read and write it: chmod u+rw {self._quoted}"
            raise self._unreadable("cannot be read (permission denied)", how) from exc
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    @property
    def _quoted(self) -> str:
        return shlex.quote(str(self.path))

    def _unreadable(self, what: str, fix: str) -> InputError:
        return InputError(
            f"this MEMORY.md {what}; it is left out of prompts and memory writes are refused",
            file=self.path,
            fix=fix,
        )

    def _parse(self, data: bytes) -> MemoryDoc:
        doc, warn = MemoryDoc(), []
        current: str | None = None
        titled = False  # a title was seen since the last separator
        raw_lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
        if raw_lines[-1] == b"":
            raw_lines.pop()  # the final newline ends the last line; it is no blank line
        crlf = next((n for n, raw in enumerate(raw_lines, 1) if raw.endswith(b"\r")), 0)
        if crlf:
            warn.append(f"line {crlf}: Windows line endings (CRLF) read as plain newlines")
        for number, raw in enumerate(raw_lines, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace").strip()
                warn.append(f"line {number}: invalid UTF-8 bytes replaced with U+FFFD")
            if not line:
                warn.append(f"line {number}: blank line ignored")
            elif line == SEPARATOR:
                current, titled = None, False
            elif line.startswith("#"):
                if titled:
                    warn.append(f"line {number}: missing '§' before this title")
                title = line.lstrip("#").strip()
                doc.language = doc.language or self._title_language.get(normalize(title))
                current, titled = self._title(title, number, warn, doc), True
            else:
                if current is None:
                    warn.append(f"line {number}: entry outside any section; read into facts")
                doc.sections[current or "facts"].append(line)
        doc.warnings = warn
        return doc

    def _title(self, title: str, number: int, warn: list[str], doc: MemoryDoc) -> str:
        sid = self._aliases.get(normalize(title))
        if sid is None:
            warn.append(f"line {number}: unknown section title '{title}'; read into facts")
            return "facts"
        expected = self.titles_in(self.language or doc.language or "zh")[sid]
        if title != expected:
            warn.append(f"line {number}: title '{title}' read as {sid} ('{expected}')")
        return sid

    def render(self, doc: MemoryDoc) -> str:
        """The file text for ``doc``: every section with its title, even when empty."""
        titles = self.titles_in(self.language or doc.language or "zh")
        blocks = [
            "\n".join([f"# {titles[sid]}", *doc.sections.get(sid, [])]) for sid in SECTION_IDS
        ]
        return f"\n{SEPARATOR}\n".join(blocks) + "\n"

    def text(self) -> str:
        """The current content as rendered (what goes into the prompt); ``""`` when no file."""
        return self.render(self.read()) if self.path.exists() else ""

    def add(
        self, section: str, entry: str, *, source: str = "", replaces: str | None = None
    ) -> MemoryChange:
        """Add ``entry``, or let it replace the entry it corrects or rewords.

        It replaces an entry that gives the same attribute (``key: value`` with the same key,
        see :mod:`~framework.memory.fact_rules`), an entry it updates (a "Correction:", "moved
        to", "pushed back" about the same subject: :func:`~framework.memory.fact_rules.updates`),
        or a near-duplicate (similarity >=
        ``threshold``) naming the same numbers, ids and names. Anything else is another fact
        and is added; the entries it resembles are returned in ``similar``. A replaced value
        is kept in ``facts.json`` as superseded. ``source``: where it came from (a session).
        ``replaces``: the entry it replaces, when a consolidating model said so (first, if
        it is still in the section; see :mod:`~framework.memory.supersede`).
        """
        sid, new = self._section_id(section), clean_entry(entry)

        def apply(entries: list[str]) -> MemoryChange:
            if new in entries:
                return MemoryChange("unchanged", sid, new, new)
            scored = [(self.similarity(old, new), i) for i, old in enumerate(entries)]
            keyed = (
                [entries.index(replaces)] if replaces is not None and replaces in entries else []
            )
            keyed += superseded_by(entries, new)  # same attribute, or an update of the entry
            near = [
                (score, i)
                for score, i in scored
                if score >= self.threshold and same_fact(entries[i], new)
            ]
            similar = tuple(entries[i] for score, i in sorted(scored, reverse=True) if score >= 0.5)
            if not keyed and not near:
                entries.append(new)
                return MemoryChange("added", sid, None, new, similar[:3])
            index = keyed[0] if keyed else max(near)[1]
            old, entries[index] = entries[index], new
            rest = tuple(e for e in similar if e != old)[:3]
            return MemoryChange("replaced", sid, old, new, rest)

        return self._mutate(sid, apply, source)

    def replace(self, section: str, old: str, new: str, *, source: str = "") -> MemoryChange:
        """Replace the entry matching ``old`` (exact, substring, or most similar) with ``new``."""
        sid, cleaned = self._section_id(section), clean_entry(new)

        def apply(entries: list[str]) -> MemoryChange:
            index = self._find(sid, entries, old)
            previous = entries[index]
            if previous == cleaned:
                return MemoryChange("unchanged", sid, previous, cleaned)
            if cleaned in entries:  # merging into an entry that already exists
                del entries[index]
            else:
                entries[index] = cleaned
            return MemoryChange("replaced", sid, previous, cleaned)

        return self._mutate(sid, apply, source)

    def remove(self, section: str, old: str) -> MemoryChange:
        """Remove the entry matching ``old`` (exact, substring, or most similar)."""
        sid = self._section_id(section)

        def apply(entries: list[str]) -> MemoryChange:
            return MemoryChange("removed", sid, entries.pop(self._find(sid, entries, old)), None)

        return self._mutate(sid, apply)

    def forget(self, needle: str) -> list[MemoryChange]:
        """Remove every entry containing ``needle`` (normalised) from every section: the one
        removal that is asked by text, not by entry (``staffroom forget``). Returns each
        removal; the file is rewritten under its lock as every other write."""
        key = normalize(needle)
        removed: list[MemoryChange] = []
        if not key or not self.path.exists():
            return removed
        for sid in SECTION_IDS:

            def apply(entries: list[str], sid: str = sid) -> MemoryChange:
                gone = [e for e in entries if key in normalize(e)]
                entries[:] = [e for e in entries if key not in normalize(e)]
                removed.extend(MemoryChange("removed", sid, e, None) for e in gone)
                return MemoryChange("removed" if gone else "unchanged", sid, None, None)

            self._mutate(sid, apply)
        with self._locks.hold(self.path):  # nor may it live on as a superseded line
            self.facts.forget(lambda text: key in normalize(text))
        return removed

    def _section_id(self, section: str) -> str:
        if section not in SECTION_IDS:
            raise InputError(f"unknown section {section!r}; use one of: {', '.join(SECTION_IDS)}")
        return section

    def _find(self, sid: str, entries: list[str], old: str) -> int:
        """Index of the entry ``old`` names; :class:`InputError` listing the entries if none."""
        wanted = " ".join(old.split())
        if wanted in entries:
            return entries.index(wanted)
        key = normalize(wanted)
        hits = [i for i, entry in enumerate(entries) if key and key in normalize(entry)]
        if len(hits) > 1:
            listed = "\n".join(f"  - {entries[i]}" for i in hits)
            raise InputError(
                f"{old!r} matches {len(hits)} entries in {sid}; quote the one you mean:\n{listed}"
            )
        if hits:
            return hits[0]
        scores = [self.similarity(entry, wanted) for entry in entries]
        if scores and max(scores) > 0.5:
            return scores.index(max(scores))
        listed = "\n".join(f"  - {entry}" for entry in entries) or "  (the section is empty)"
        raise InputError(f"no entry in {sid} matches {old!r}. Entries in {sid}:\n{listed}")

    def _mutate(
        self, sid: str, apply: Callable[[list[str]], MemoryChange], source: str = ""
    ) -> MemoryChange:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._locks.hold(self.path):
                doc = self.read()
                if doc.write_refusal is not None:
                    raise doc.write_refusal
                before = MemoryDoc(
                    {s: list(entries) for s, entries in doc.sections.items()},
                    language=doc.language,
                )
                change = apply(doc.sections[sid])
                if doc.language is None and not any(before.sections.values()):
                    # A new file speaks its employee's language, else its first entry's.
                    first = "en" if is_english(change.new or "") else "zh"
                    doc.language = self.new_language or first
                if change.action != "unchanged":
                    old_text, new_text = self.render(before), self.render(doc)
                    # A change that does not grow the file is allowed even over the cap, so an
                    # over-full (hand-edited) file can always be trimmed back under it.
                    if len(new_text) > self.cap and len(new_text) > len(old_text):
                        raise MemoryCapExceeded(
                            cap_message(
                                self.cap, before.sections, old_text, new_text, change, self.render
                            )
                        )
                    self._write(new_text)
                self._record(doc, change, source)
                return change
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def _record(self, doc: MemoryDoc, change: MemoryChange, source: str) -> None:
        """facts.json after MEMORY.md (under the same lock): source, confirmed, superseded."""
        day = self.today().isoformat()
        touched: dict[str, str] = {change.new: change.action} if change.new else {}
        gone = []
        if change.action == "replaced" and change.old and change.new:
            gone.append(Superseded(change.section, change.old, change.new, day))
        current = [entry for entries in doc.sections.values() for entry in entries]
        self.facts.update(current, touched=touched, source=source, day=day, superseded=gone)

    def _write(self, text: str) -> None:
        """Write via a temp file in the same folder, so readers see the old or the new file."""
        # Under the lock no other writer is mid-write: a temp file here is a killed writer's.
        # mode=None: MEMORY.md stays private to its user (mkstemp's 0600), as it always was.
        data, prefix = text.encode("utf-8"), f".{self.path.name}."
        replace_file(self.path, data, prefix=prefix, mode=None, clear_stale=True)
