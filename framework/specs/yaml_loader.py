"""YAML with line numbers, and pydantic errors turned into errors a person can act on.

Every spec file is read here: :func:`load_yaml_file` keeps the 1-based line of every mapping
key and sequence item in a :data:`LineMap`, and :func:`validate` maps the first pydantic error
to ``file:line field: message`` plus a fix. Field-level validators raise :func:`spec_error` so
their own wording and fix survive the trip through pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from framework.errors import InputError

from ._explain import did_you_mean, explain, hint

PathKey = tuple[str | int, ...]
"""Where a value sits in a document: ``("participants", 2)``, ``("steps", 0, "speaker")``."""
LineMap = dict[PathKey, int]
"""1-based line of every mapping key and sequence item, by path. ``()`` is the document."""

M = TypeVar("M", bound=BaseModel)

UNSAVED = Path("<unsaved>")
"""``source`` of a spec built in code rather than loaded from a file."""


class _NumberTooLong(yaml.MarkedYAMLError):
    """A number written with more digits than any spec field could want."""


class _LineLoader(yaml.SafeLoader):
    """SafeLoader (plain data only). Loading composes the node tree first and keeps it, so
    :func:`load_yaml_text` can read each key's and item's line from its start mark."""

    def construct_bounded_int(self, node: yaml.ScalarNode) -> Any:
        # Python refuses to turn over 4,300 decimal digits into a number (ValueError), and a
        # hex number of any length would become one too big to print in an error message.
        if len(str(node.value)) > MAX_DIGITS:
            raise _NumberTooLong(
                problem=f"a number written with {len(str(node.value)):,} characters "
                f"(at most {MAX_DIGITS})",
                problem_mark=node.start_mark,
            )
        return self.construct_yaml_int(node)


_LineLoader.add_constructor("tag:yaml.org,2002:int", _LineLoader.construct_bounded_int)


def field_name(path: Iterable[str | int]) -> str:
    """``("steps", 0, "speaker")`` -> ``steps[0].speaker``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def nearest_line(lines: LineMap, path: Iterable[str | int]) -> int | None:
    """Line of ``path``, else of its closest known ancestor (a missing key has no line)."""
    key = tuple(path)
    while True:
        if key in lines:
            return lines[key]
        if not key:
            return None
        key = key[:-1]


def spec_error(message: str, fix: str, *, at: PathKey = ()) -> PydanticCustomError:
    """An error for a validator to raise: ``validate`` keeps the wording and the fix.

    ``at`` is appended to the error's location, so a validator on a whole list can point at
    the offending item (and a model validator at any field).
    """
    return PydanticCustomError("spec", "{message}", {"message": message, "fix": fix, "at": at})


class SpecModel(BaseModel):
    """Base of a document loaded from a file: remembers its source and the line of each field.

    ``source`` and ``lines`` are private attributes, so they are neither accepted from the file
    nor part of the JSON schema.
    """

    model_config = ConfigDict(extra="forbid")

    _source: Path = PrivateAttr(default=UNSAVED)
    _lines: LineMap = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> Path:
        """File this was loaded from (``<unsaved>`` when built in code)."""
        return self._source

    @property
    def lines(self) -> LineMap:
        """Line of each key and item in :attr:`source`, by path."""
        return self._lines

    def line_of(self, *path: str | int) -> int | None:
        """Line of ``path`` in :attr:`source`, or of its closest known ancestor."""
        return nearest_line(self._lines, path)

    def with_source(self, source: Path, lines: LineMap) -> Self:
        """Attach the file and line map (used by the loaders); returns ``self``."""
        self._source = source
        self._lines = dict(lines)
        return self


def read_text(path: Path, error_cls: type[InputError]) -> str:
    """The file's text, or ``error_cls`` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error_cls(
            "file not found", file=path, fix="check the path (it is relative to where you run)"
        ) from None
    except UnicodeDecodeError as exc:
        raise error_cls(
            f"file is not UTF-8 text ({exc.reason})", file=path, fix="save the file as UTF-8"
        ) from None
    except OSError as exc:
        raise error_cls(
            f"cannot read file: {exc.strerror}", file=path, fix="check the path"
        ) from None


def load_yaml_file(
    path: str | Path, *, error_cls: type[InputError] = InputError
) -> tuple[Any, LineMap]:
    """Parse a YAML file: ``(data, LineMap)``; syntax errors become ``error_cls``."""
    path = Path(path)
    return load_yaml_text(read_text(path, error_cls), file=path, error_cls=error_cls)


def load_yaml_text(
    text: str,
    *,
    file: str | Path,
    error_cls: type[InputError] = InputError,
    first_line: int = 1,
) -> tuple[Any, LineMap]:
    """Parse YAML ``text`` that starts at line ``first_line`` of ``file`` (front matter: 2)."""
    if len(text) > MAX_CHARS:
        raise error_cls(
            f"the file has {len(text):,} characters; spec files are capped at {MAX_CHARS:,}",
            file=file,
            line=first_line,
            fix="keep long text in a separate file (a prompt template, the workspace)",
        )
    loader: _LineLoader | None = None
    try:
        loader = _LineLoader(text)  # the reader refuses NUL and control characters here
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _NumberTooLong as exc:
        mark = exc.problem_mark
        line = mark.line + first_line if mark is not None else first_line
        fix = "spec numbers are small; quote the value if it is meant as text"
        raise error_cls(str(exc.problem), file=file, line=line, fix=fix) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, file, error_cls, first_line) from None
    except yaml.YAMLError as exc:
        raise error_cls(
            f"YAML error: {exc}", file=file, line=first_line, fix=_yaml_fix(str(exc))
        ) from None
    except RecursionError:
        raise error_cls(
            "the YAML is nested too deeply to read",
            file=file,
            line=first_line,
            fix=f"spec files need a few levels of nesting; keep it under {MAX_DEPTH}",
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: LineMap = {(): first_line}
    if node is not None:
        lines[()] = node.start_mark.line + first_line
        _collect_lines(node, (), lines, first_line - 1, file, error_cls)
    return data, lines


def _syntax_error(
    exc: yaml.MarkedYAMLError, file: str | Path, error_cls: type[InputError], first_line: int
) -> InputError:
    problem = exc.problem or "invalid YAML"
    context = exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + first_line if mark is not None else first_line
    message = f"YAML syntax error: {problem}"
    if exc.context_mark is not None and exc.context_mark.line + first_line != line:
        started = exc.context_mark.line + first_line
        message += f" ({context} that starts on line {started})"
        # An unclosed bracket or quote is noticed lines later; the fix belongs where it opened.
        if "flow" in context or "quoted" in context:
            line = started
    elif context:
        message += f" ({context})"
    return error_cls(message, file=file, line=line, fix=_yaml_fix(f"{problem} {context}"))


MAX_CHARS = 1_000_000
"""Characters a spec file may hold."""
MAX_DEPTH = 64
"""Nesting levels a spec file may use."""
MAX_VALUES = 100_000
"""Keys and items a spec file may hold once aliases are expanded."""
MAX_DIGITS = 100
"""Characters a number may be written with (each numeric field's range is far smaller)."""


def _collect_lines(
    node: yaml.Node,
    path: PathKey,
    lines: LineMap,
    offset: int,
    file: str | Path,
    error_cls: type[InputError],
) -> None:
    if len(path) > MAX_DEPTH or len(lines) > MAX_VALUES:
        # Aliases can make a few hundred bytes stand for billions of values (an "alias bomb").
        raise error_cls(
            f"the YAML is nested more than {MAX_DEPTH} levels or holds more than "
            f"{MAX_VALUES:,} values (aliases expand)",
            file=file,
            line=node.start_mark.line + 1 + offset,
            field=field_name(path) or None,
            fix="write the values out plainly; spec files need neither deep nesting nor "
            "aliases that repeat aliases",
        )
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.value == "<<":
                continue
            key_path = (*path, key_node.value)
            line = key_node.start_mark.line + 1 + offset
            # PyYAML silently keeps the last of two equal keys; a person almost never means that.
            if key_path in lines and lines[key_path] != line:
                raise error_cls(
                    f"key '{key_node.value}' appears twice (first on line {lines[key_path]})",
                    file=file,
                    line=line,
                    field=field_name(key_path),
                    fix="keep one of the two; the second would silently replace the first",
                )
            lines[key_path] = line
            _collect_lines(value_node, key_path, lines, offset, file, error_cls)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1 + offset
            _collect_lines(item, (*path, index), lines, offset, file, error_cls)


_YAML_FIXES = (
    (
        "unacceptable character",
        "remove control characters (NUL, ESC, ...) from the file; save it as plain UTF-8 text",
    ),
    ("tab", "indent with spaces, not tabs"),
    ("'\\t'", "indent with spaces, not tabs"),
    (
        "mapping values are not allowed",
        "quote the value if it contains ': ' (e.g. do: \"评估: 风险\"), or fix the indentation",
    ),
    ("could not find expected ':'", "add ':' after the key, or close the open quote"),
    ("expected <block end>", "line up this line with its siblings (same indentation)"),
    ("found character '`'", "quote values that start with a backtick"),
    ("found undefined alias", "define the &anchor before using *alias, or quote the '*'"),
    ("while scanning a quoted scalar", "close the quote"),
    ("flow sequence", "close the '[' with ']' and separate items with ', '"),
    ("flow mapping", "close the '{' with '}' and separate entries with ', '"),
)


def _yaml_fix(problem: str) -> str:
    lowered = problem.lower()
    for needle, fix in _YAML_FIXES:
        if needle.lower() in lowered:
            return fix
    return "check indentation (spaces only) and quoting near this line"


def validate(
    model_cls: type[M],
    data: Any,
    *,
    file: str | Path,
    lines: LineMap,
    error_cls: type[InputError],
    context: dict[str, Any] | None = None,
) -> M:
    """Validate ``data`` as ``model_cls``; a failure becomes ``error_cls`` at the right line.

    The first problem gives the error's line, field and fix; when there are several, each
    further one is listed in the message with its own line.
    """
    if data is None:
        required = [name for name, info in model_cls.model_fields.items() if info.is_required()]
        raise error_cls(
            "the file is empty",
            file=file,
            line=1,
            fix=f"write the fields as `key: value` lines: {', '.join(required)}",
        )
    try:
        model = model_cls.model_validate(data, context=context)
    except ValidationError as exc:
        raise _to_input_error(model_cls, exc.errors(), file, lines, error_cls) from None
    if isinstance(model, SpecModel):
        model.with_source(Path(file), lines)
    return model


def _to_input_error(
    model_cls: type[BaseModel],
    errors: list[ErrorDetails],
    file: str | Path,
    lines: LineMap,
    error_cls: type[InputError],
) -> InputError:
    found = [_describe(model_cls, err, lines) for err in errors]
    typos = [path for path, _, _, kind in found if kind == "extra_forbidden"]

    def explained_by_typo(path: PathKey) -> bool:
        # `partcipants:` yields both "unknown field" and "missing field 'participants'";
        # the first says it all.
        return any(t[:-1] == path[:-1] and did_you_mean(str(t[-1]), [str(path[-1])]) for t in typos)

    kept = [f for f in found if not (f[3] == "missing" and explained_by_typo(f[0]))]
    # One problem per location (a union reports each branch, which reads as noise), top first.
    unique = list({(path, msg): (path, msg, fix) for path, msg, fix, _ in kept}.values())
    unique.sort(key=lambda item: nearest_line(lines, item[0]) or 0)
    path, message, fix = unique[0]
    for other, other_message, _ in unique[1:]:
        where = field_name(other) or "(top level)"
        message += f"\n  also line {nearest_line(lines, other) or '?'} {where}: {other_message}"
    return error_cls(
        message, file=file, line=nearest_line(lines, path), field=field_name(path) or None, fix=fix
    )


def _describe(
    model_cls: type[BaseModel], err: ErrorDetails, lines: LineMap
) -> tuple[PathKey, str, str, str]:
    ctx = err.get("ctx") or {}
    loc: PathKey = tuple(err["loc"])
    if err["type"] == "spec":
        loc = (*loc, *ctx.get("at", ()))
    loc = _clean_loc(loc, lines, keep_last=err["type"] in {"missing", "extra_forbidden"})
    message, fix = explain(model_cls, err, loc)
    return loc, message, fix, err["type"]


_TAG = re.compile(r"[\[\](),]|^(str|int|float|bool|list|dict|none|function-\w+)$")


def _clean_loc(loc: PathKey, lines: LineMap, *, keep_last: bool) -> PathKey:
    """Drop the union-branch tags pydantic puts in ``loc`` (``'str'``, ``'list[str]'``)."""
    cleaned: list[str | int] = []
    for i, part in enumerate(loc):
        is_last = i == len(loc) - 1
        known = (*cleaned, part) in lines
        if (
            isinstance(part, str)
            and _TAG.search(part)
            and not known
            and not (keep_last and is_last)
        ):
            continue
        cleaned.append(part)
    return tuple(cleaned)


__all__ = [
    "UNSAVED",
    "LineMap",
    "PathKey",
    "SpecModel",
    "did_you_mean",
    "field_name",
    "hint",
    "load_yaml_file",
    "load_yaml_text",
    "nearest_line",
    "read_text",
    "spec_error",
    "validate",
]
