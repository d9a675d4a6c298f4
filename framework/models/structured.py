"""Structured answers: ask a model for JSON matching a schema, and say plainly when it failed.

Consolidation, the SOP reviser and the model selector all need an object, not prose, and all
have a deterministic fallback. :func:`ask_structured` is their one way to ask:

- the prompt always carries the JSON schema and a few examples (:func:`answer_format`), which
  is all a base model or a server without JSON mode has to go on;
- by the profile's ``structured`` mode the request also binds ``response_format``:
  ``json_schema`` (OpenAI's structured outputs, not strict), ``json_object`` with the schema
  (llama.cpp's server turns that schema into a grammar; others read it as plain JSON mode), or
  nothing (``prompt``);
- the answer's JSON is pulled out of code fences or surrounding text and validated with
  pydantic; an unusable answer is retried once with the problem shown to the model;
- whatever happens, the caller gets a :class:`StructuredAnswer` whose ``fallback_reason`` says
  in a few words why there is no value, so the fallback it takes can be shown, not hidden.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from framework.language import snippet
from framework.models.calls import ModelCallError, call_model, text_of
from framework.models.profile import ModelProfile

T = TypeVar("T", bound=BaseModel)

UNUSABLE = "model answer unusable"
CALL_FAILED = "model call failed"
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_OBJECT_STARTS = 50
"""Where an answer is mostly prose or HTML, how many ``{`` to try before giving up."""
_ECHO_CHARS = 600
"""How much of an unusable answer the retry shows back: enough to recognise, small enough for
a 4k-token window."""


@dataclass(frozen=True, slots=True)
class StructuredAnswer(Generic[T]):
    """What :func:`ask_structured` got: a validated value, or why there is none."""

    value: T | None
    fallback_reason: str | None = None
    """Short and human-readable, e.g. ``model answer unusable: not JSON ('<html>…')``."""
    attempts: int = 0
    """Answers requested (1, or 2 after a retry); transient-error retries are not counted."""
    call_failed: bool = False
    """True when the model could not be called at all (as opposed to answering badly)."""
    raw: str = ""
    """The text of the last answer, for a lenient reader or a log."""


class _Unusable(ValueError):
    """An answer that cannot be used; the message says why, for the model and for people."""


def compact_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema``'s JSON schema without titles or class docstrings: fewer tokens, same rules.

    Class docstrings are written for developers; a field's own description stays.
    """

    def strip(node: Any, *, names: bool = False) -> Any:
        if isinstance(node, dict):
            if names:  # a "properties" mapping: its keys are field names, keep them all
                return {k: strip(v) for k, v in node.items()}
            dropped = {"title", "description"} if "properties" in node else {"title"}
            return {
                k: strip(v, names=k in ("properties", "$defs"))
                for k, v in node.items()
                if not (k in dropped and isinstance(v, str))
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    result: dict[str, Any] = strip(schema.model_json_schema())
    return result


def answer_format(schema: type[BaseModel], examples: Sequence[BaseModel] = ()) -> str:
    """The prompt text that asks for ``schema``: the JSON schema and the examples.

    Templates place it with ``{{ answer_format }}``; :func:`ask_structured` adds it itself
    when the prompt does not already contain it.
    """
    shape = json.dumps(compact_schema(schema), ensure_ascii=False, separators=(",", ":"))
    text = f"Reply with one JSON object only, matching this JSON schema:\n{shape}"
    for example in examples:
        text += "\nExample:\n" + example.model_dump_json(exclude_none=True)
    return text


def response_format(schema: type[BaseModel], profile: ModelProfile) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``profile``'s JSON mode (None: prompt only)."""
    if profile.structured == "json_schema":
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
        return {
            "type": "json_schema",
            # Not strict: strict mode forbids optional fields and defaults, which our
            # schemas use; pydantic validates the answer anyway.
            "json_schema": {"name": name, "schema": compact_schema(schema), "strict": False},
        }
    if profile.structured == "json_object":
        return {"type": "json_object", "schema": compact_schema(schema)}
    return None


def extract_json(text: str) -> Any:
    """The JSON in a model's answer: the whole text, a fenced block, or the first object in it.

    Raises ``ValueError`` naming what the answer looked like when there is none.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        for n, match in enumerate(re.finditer(r"\{", candidate)):
            if n >= _MAX_OBJECT_STARTS:
                break
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise _Unusable(f"not JSON ({_quote(text)})" if text.strip() else "empty answer")


def _quote(text: str) -> str:
    return f"'{snippet(text, 40)}'"


def _schema_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or 'the object'}: {e['msg']}" for e in errors[:3]
    ]
    more = f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
    return f"does not match the schema ({'; '.join(parts)}{more})"


def _read(
    text: str,
    schema: type[T],
    check: Callable[[T], str | None] | None,
    lenient: Callable[[str], T | None] | None,
) -> T:
    """The validated value of one answer, or :class:`_Unusable` saying what is wrong."""
    try:
        value = schema.model_validate(extract_json(text))
    except (ValueError, ValidationError) as exc:
        fallback = lenient(text) if lenient is not None else None
        if fallback is None:
            problem = _schema_problem(exc) if isinstance(exc, ValidationError) else str(exc)
            raise _Unusable(problem) from exc
        value = fallback
    wrong = check(value) if check is not None else None
    if wrong:
        raise _Unusable(wrong)
    return value


def _with_format(messages: Sequence[BaseMessage], block: str) -> list[BaseMessage]:
    """``messages`` with the answer format in them (added to the last user message)."""
    out = list(messages)
    if any(block in text_of(m) for m in out):
        return out
    for i in range(len(out) - 1, -1, -1):
        message = out[i]
        if isinstance(message, HumanMessage) and isinstance(message.content, str):
            out[i] = HumanMessage(
                content=f"{message.content}\n\n{block}",
                additional_kwargs=message.additional_kwargs,
            )
            return out
    return [*out, HumanMessage(content=block)]


def _cut_off(exc: BaseException) -> bool:
    # openai's parse() raises this when the answer hit max_tokens: a bad answer, not a
    # failed call, so it deserves the retry.
    cause: BaseException | None = exc
    while cause is not None:
        if type(cause).__name__ == "LengthFinishReasonError":
            return True
        cause = cause.__cause__
    return False


async def ask_structured(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: type[T],
    profile: ModelProfile,
    *,
    examples: Sequence[T] = (),
    check: Callable[[T], str | None] | None = None,
    lenient: Callable[[str], T | None] | None = None,
    retries: int = 2,
    backoff: float = 1.0,
) -> StructuredAnswer[T]:
    """Ask ``model`` for an answer matching ``schema``; retry an unusable one once.

    ``check`` returns what is wrong with a valid object in the caller's terms (an edit that
    does not apply, an unknown id), which counts as unusable too. ``lenient`` reads an answer
    that is not JSON (a bare id) before it is called unusable. ``retries`` and ``backoff``
    are :func:`~framework.models.calls.call_model`'s, for transient failures. Never raises
    for a model's failure: the result says what happened.
    """
    bound = response_format(schema, profile)
    runnable = model.bind(response_format=bound) if bound is not None else model
    request = _with_format(messages, answer_format(schema, examples))
    raw, attempts = "", 0
    while True:
        attempts += 1
        try:
            reply = await call_model(runnable, request, profile, retries=retries, backoff=backoff)
        except ModelCallError as exc:
            if not _cut_off(exc):
                return StructuredAnswer(None, f"{CALL_FAILED}: {exc}", attempts, True, raw)
            raw, problem = "", f"cut off at the output cap ({profile.max_output_tokens} tokens)"
        else:
            raw = text_of(reply)
            try:
                return StructuredAnswer(_read(raw, schema, check, lenient), None, attempts, raw=raw)
            except _Unusable as exc:
                problem = str(exc)
            if reply.response_metadata.get("finish_reason") == "length":
                problem += f"; cut off at the output cap ({profile.max_output_tokens} tokens)"
        if attempts >= 2:
            return StructuredAnswer(None, f"{UNUSABLE}: {problem}", attempts, False, raw)
        echo: list[BaseMessage] = [AIMessage(content=raw[:_ECHO_CHARS])] if raw else []
        retry = HumanMessage(
            content=f"That answer cannot be used: {problem}. Reply again with only one JSON "
            "object that matches the schema."
        )
        request = [*request, *echo, retry]
