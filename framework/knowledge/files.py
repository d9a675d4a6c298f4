"""How the knowledge stores touch files: one way to read, replace and validate.

- :func:`read_utf8`: a file's text, or an :class:`InputError` naming it and the fix (a folder in
  its place, not UTF-8); the file is never changed by a failed read.
- :func:`write_atomic`: temp file in the same folder, fsync, ``os.replace``: readers see the old
  file or the new one, never half of one.
- Every read-modify-write holds the file's lock, from the :class:`~framework.file_locks.FileLocks`
  the stores were built with (``<file>.lock``, or an advisory lock on the database), so writers
  in several processes, or on several machines, lose nothing.
- :class:`JsonItems`: a JSON file ``{"format": 1, "items": [...]}`` validated by pydantic on
  every read; a hand-broken one is an :class:`InputError` naming file, line and field, and is
  never overwritten (an edit reads it first and stops there).

All of it is blocking I/O: async callers run it in a worker thread.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from framework.atomic_files import replace_file
from framework.errors import InputError, StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.specs.yaml_loader import load_yaml_text, spec_error, validate

__all__ = ["FileItem", "ItemsDoc", "JsonItems", "build", "read_utf8", "write_atomic"]

_TMP_PREFIX = ".knowledge-tmp-"


def read_utf8(path: Path) -> str | None:
    """The text of ``path``; None when it does not exist.

    A folder in its place, no permission, or a file that is not UTF-8 is an
    :class:`InputError` naming the file and the fix; a failing disk is a :class:`StorageError`.
    """
    try:
        # A folder or a FIFO in a file's place must be named, not read (a FIFO would block).
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            what = "a folder, not a file" if stat.S_ISDIR(mode) else "not a regular file"
            raise InputError(f"is {what}", file=path, fix="move it away")
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise InputError(
            "cannot be read (permission denied)", file=path, fix=f"chmod u+rw {path}"
        ) from None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); it is left unchanged",
            file=path,
            line=data.count(b"\n", 0, exc.start) + 1,
            fix=f"convert it: iconv -f GBK -t UTF-8 {path} > {path}.utf8 && mv {path}.utf8 {path}",
        ) from None


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; creates missing folders."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text.encode("utf-8"), prefix=_TMP_PREFIX)  # 0644: for people too
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


class FileItem(BaseModel):
    """Base of an item kept in a :class:`JsonItems` file: it has an ``id``."""

    id: str


M = TypeVar("M", bound=FileItem)
B = TypeVar("B", bound=BaseModel)


class ItemsDoc(BaseModel, Generic[M]):
    """The shape of a JSON items file; ids are unique within it."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = 1
    items: list[M] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        seen: set[str] = set()
        for index, item in enumerate(self.items):
            if item.id in seen:
                fix = "give each item its own id"
                raise spec_error(f"id '{item.id}' appears twice", fix, at=("items", index, "id"))
            seen.add(item.id)
        return self


class JsonItems(Generic[M]):
    """One JSON items file: validated reads, locked atomic read-modify-write (:meth:`edit`).

    ``first`` and ``last`` order each item's keys when written (id and its own words first,
    bookkeeping last), so the file reads well; they change nothing else. ``locks``: how its
    writers exclude each other (default: ``<file>.lock``).
    """

    def __init__(
        self,
        path: Path,
        doc: type[ItemsDoc[M]],
        *,
        last: tuple[str, ...] = (),
        locks: FileLocks | None = None,
    ) -> None:
        self.path, self.doc, self._last = path, doc, last
        self._locks = locks or LocalFileLocks()

    def load(self) -> list[M]:
        """The items (none when the file is missing or blank); InputError when it is broken."""
        text = read_utf8(self.path)
        if text is None or not text.strip():
            return []
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg} (column {exc.colno}); the file was left unchanged",
                file=self.path,
                line=exc.lineno,
                fix="fix the JSON there (a missing comma, quote or bracket?)",
            ) from None
        except RecursionError:
            raise InputError(
                "JSON nested too deeply to read", file=self.path, fix="flatten the file"
            ) from None
        try:
            return list(self.doc.model_validate(data).items)
        except ValidationError:
            try:  # JSON is YAML, and the YAML reader knows the line of every key
                lines = load_yaml_text(text, file=self.path)[1]
            except InputError:
                lines = {}
            doc = validate(self.doc, data, file=self.path, lines=lines, error_cls=InputError)
            return list(doc.items)

    def dump(self, items: list[M]) -> str:
        """The file text for ``items``."""
        rows: list[dict[str, Any]] = []
        for item in items:
            raw = item.model_dump(mode="json", by_alias=True)
            rows.append(
                {k: v for k, v in raw.items() if k not in self._last}
                | {k: raw[k] for k in self._last if k in raw}
            )
        return _json({"format": 1, "items": rows}, "") + "\n"

    @contextmanager
    def edit(self) -> Iterator[list[M]]:
        """The items, under the lock; written back atomically if the block changed them.

        A broken file raises before the block runs, so it is never overwritten; an exception
        inside the block writes nothing.
        """
        with self._locks.hold(self.path):
            items = self.load()
            before = self.dump(items)
            yield items
            after = self.dump(items)
            if after != before:
                write_atomic(self.path, after)


def _json(value: Any, indent: str) -> str:
    """JSON with a line per field, but a flat object or list on one line (a dated note,
    a list of names): short enough to read and edit by hand."""
    inner = indent + "  "
    if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
        fields = (
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {_json(v, inner)}"
            for k, v in value.items()
        )
        return "{\n" + ",\n".join(fields) + f"\n{indent}}}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return "[\n" + ",\n".join(f"{inner}{_json(v, inner)}" for v in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)


def build(model: type[B], fields: dict[str, Any]) -> B:
    """``model(**fields)`` (strings stripped), or an InputError naming the field and fix."""
    try:
        return model(**{k: v.strip() if isinstance(v, str) else v for k, v in fields.items()})
    except ValidationError as exc:
        first = exc.errors()[0]
        ctx = first.get("ctx") or {}
        where = ".".join(str(part) for part in first["loc"]) or None
        raise InputError(
            str(ctx.get("message") or first["msg"]),
            field=where,
            fix=str(ctx.get("fix") or f"correct {where or 'the value'}"),
        ) from None
