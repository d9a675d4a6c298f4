"""Plain-words message and fix for one pydantic error (used by ``yaml_loader.validate``).

Pydantic's own text ("Input should be a valid list") names neither what was found nor what
to write; people editing YAML need both, so each common error type gets its own wording and
the fix quotes an example from the field's ``examples`` when the model gives one.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails


def did_you_mean(name: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``name`` (case-insensitive), or None when nothing is close."""
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


def hint(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when something is close to ``name``, else ``""``."""
    guess = did_you_mean(name, choices)
    return f" (did you mean '{guess}'?)" if guess and guess != name else ""


_MAPPINGS = frozenset({"dict_type", "model_type", "model_attributes_type"})

_KINDS = {
    "list_type": "a list",
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "int_parsing_size": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping (`key: value` lines)",
    "model_type": "a mapping (`key: value` lines)",
    "model_attributes_type": "a mapping (`key: value` lines)",
}


QUOTED = 40
"""Characters of a field's value an error may quote; longer values are described, not shown."""


def describe_value(value: Any, *, quote: bool = True) -> str:
    """What a YAML value looks like to a person: ``a string``, ``a list``, ``nothing``.

    ``quote``: show a short string or a number (a field's value, to help find it); off for
    a whole file's content, which may be anything (a key, a password) and is never shown.
    """
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return str(value).lower() if quote else "true or false"
    if isinstance(value, int | float):
        return f"a number ({value})" if quote else "a number"
    if isinstance(value, str):
        if not quote:
            return f"a string of {len(value):,} characters"
        return f"a string ('{value}')" if len(value) <= QUOTED else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def explain(
    model_cls: type[BaseModel], err: ErrorDetails, loc: tuple[str | int, ...]
) -> tuple[str, str]:
    """``(message, fix)`` for ``err``, whose cleaned location is ``loc``."""
    kind = err["type"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    value = err.get("input")
    name = str(loc[-1]) if loc and isinstance(loc[-1], str) else "value"
    owner, info = _field_at(model_cls, loc)
    example = _example(name, info)
    if kind == "spec":
        return str(ctx["message"]), str(ctx["fix"])
    if not loc and kind in _MAPPINGS:
        # The whole file is not `key: value` lines: say what it holds, never what it says
        # (a file named by mistake may hold a key or a password).
        return (
            f"the file holds {describe_value(value, quote=False)}, not `key: value` lines",
            "check that this is the right file: a spec file is a mapping of `key: value` lines",
        )
    if kind == "missing":
        return f"missing field '{name}'", f"add `{example}`" + _described(info)
    if kind == "extra_forbidden":
        aliases = [(f.alias or n) for n, f in owner.model_fields.items()] if owner else []
        guess = did_you_mean(name, aliases)
        name = _short(name)
        if guess:
            return (
                f"unknown field '{name}' (did you mean '{guess}'?)",
                f"rename '{name}' to '{guess}'",
            )
        return f"unknown field '{name}'", f"remove it; the fields here are: {', '.join(aliases)}"
    if kind == "list_type" and isinstance(value, str | int | float):
        item = value if len(str(value)) <= QUOTED else "..."
        return f"expected a list, got {describe_value(value)}", f"write a list: `{name}: [{item}]`"
    if kind in _KINDS:
        return (
            f"expected {_KINDS[kind]}, got {describe_value(value)}",
            f"write {_KINDS[kind]}{_range_text(info)}, e.g. `{example}`" + _quote_hint(kind, value),
        )
    if kind == "literal_error":
        return _literal(name, value, info, ctx)
    if kind in {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}:
        bound = {
            "greater_than_equal": ">=",
            "greater_than": ">",
            "less_than_equal": "<=",
            "less_than": "<",
        }[kind]
        limit = next(iter(ctx.values()), "?")
        limit = f"{limit:,}" if isinstance(limit, int) else limit
        allowed = _range_text(info)
        if allowed:
            return (
                f"must be {bound} {limit}, got {value} (allowed:{allowed})",
                f"use a whole number{allowed}, e.g. `{example}`",
            )
        return f"must be {bound} {limit}, got {value}", f"use a number {bound} {limit}"
    if kind == "string_too_long":
        limit = int(ctx.get("max_length", 0))
        size = len(value) if isinstance(value, str) else 0
        return (
            f"is {size:,} characters long; at most {limit:,} are allowed",
            f"shorten `{name}` to {limit:,} characters or fewer"
            + ("" if limit < 1000 else "; keep longer material in a workspace file")
            + _described(info),
        )
    if kind == "too_short":
        return "must not be empty", f"add at least one item, e.g. `{example}`"
    if kind == "string_pattern_mismatch":
        return (
            f"'{_short(value)}' is not a valid id",
            f"use lowercase letters, digits, '-' and '_', e.g. `{name}: {slugify(str(value))}`",
        )
    message = err["msg"].removeprefix("Value error, ")
    return message, f"correct `{name}`" + _described(info)


def slugify(text: str) -> str:
    """A valid id close to ``text`` (``Product Manager`` -> ``product-manager``)."""
    slug = re.sub(r"[^a-z0-9_]+", "-", text[:200].strip().lower()).strip("-_")
    return slug[:64].strip("-_") or "my-id"


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _range_text(info: FieldInfo | None) -> str:
    """`` from 1 to 1,000`` for a field with both bounds (``""`` when it has not both)."""
    low = high = None
    for rule in info.metadata if info is not None else []:
        low = getattr(rule, "ge", None) if getattr(rule, "ge", None) is not None else low
        high = getattr(rule, "le", None) if getattr(rule, "le", None) is not None else high
        if getattr(rule, "gt", None) is not None:
            low = rule.gt + 1
    if isinstance(low, int) and isinstance(high, int):
        return f" from {low:,} to {high:,}"
    return ""


def _literal(name: str, value: Any, info: FieldInfo | None, ctx: dict[str, Any]) -> tuple[str, str]:
    choices = _literal_choices(info.annotation if info else None)
    if not choices:
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
    listed = ", ".join(choices)
    return (
        f"'{_short(value)}' is not one of: {listed}{hint(str(value)[:200], choices)}",
        f"write one of them, e.g. `{name}: {choices[0] if choices else '...'}`",
    )


def _literal_choices(annotation: Any) -> list[str]:
    if get_origin(annotation) is Literal:
        return [str(arg) for arg in get_args(annotation)]
    for arg in get_args(annotation):
        found = _literal_choices(arg)
        if found:
            return found
    return []


def _described(info: FieldInfo | None) -> str:
    return f" ({info.description})" if info is not None and info.description else ""


def _quote_hint(kind: str, value: Any) -> str:
    if kind == "string_type" and isinstance(value, int | float | bool):
        return f'; quote it to keep it as text: "{value}"'
    return ""


def _example(name: str, info: FieldInfo | None) -> str:
    if info is not None and info.examples:
        dumped = yaml.safe_dump(
            {name: info.examples[0]}, allow_unicode=True, default_flow_style=True, width=200
        ).strip()
        return dumped.removeprefix("{").removesuffix("}")
    return f"{name}: ..."


def _field_at(
    model_cls: type[BaseModel], loc: tuple[str | int, ...]
) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model owning the last field of ``loc``, and that field's info (when known)."""
    owner: type[BaseModel] | None = None
    info: FieldInfo | None = None
    current: Any = model_cls
    for part in loc:
        if isinstance(part, int):
            current = _item_type(current)
            info = None
            continue
        if (value_type := _value_type(current)) is not None:
            # A key of a mapping (`schedules: {standup: ...}`): go on in its values' type.
            current, info = value_type, None
            continue
        model = _model_in(current)
        if model is None:
            return owner, None
        owner = model
        info = _lookup(model, part)
        if info is None:
            return owner, None
        current = info.annotation
    return owner, info


def _lookup(model: type[BaseModel], key: str) -> FieldInfo | None:
    for field_name, info in model.model_fields.items():
        if key in (field_name, info.alias):
            return info
    return None


def _strip(annotation: Any) -> list[Any]:
    """The plain types in ``annotation`` (unions and ``Annotated`` opened up)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _strip(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [t for arg in get_args(annotation) for t in _strip(arg)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for candidate in _strip(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _value_type(annotation: Any) -> Any:
    """The values' type of a ``dict[K, V]`` annotation (None for anything else)."""
    for candidate in _strip(annotation):
        if get_origin(candidate) is dict:
            args = get_args(candidate)
            return args[1] if len(args) == 2 else Any
    return None


def _item_type(annotation: Any) -> Any:
    for candidate in _strip(annotation):
        if get_origin(candidate) in (list, tuple, set):
            args = get_args(candidate)
            return args[0] if args else Any
    return Any
