"""One way to call a chat model: roles laid out for it, transient failures retried, errors named.

Every model call of the runtime (employee turns, the selector, consolidation, SOP revision)
goes through :func:`call_model`, so every one of them gets the same behaviour:

- the messages are laid out for the model's roles (:func:`layout`): a template without a
  system role (Gemma's) gets the instructions folded into the first user message, and every
  request carries at least one user message;
- connection errors, timeouts, 429 and 5xx answers are retried with exponential backoff;
- a failure becomes a :class:`ModelCallError` whose ``kind`` says what happened and whose
  message names the endpoint and what to check.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from framework.errors import ModelError
from framework.models.brief import BRIEF_KEY
from framework.models.profile import ModelProfile

ErrorKind = Literal[
    "connection", "timeout", "rate_limit", "server", "context_length", "auth", "request", "other"
]
TRANSIENT: frozenset[str] = frozenset({"connection", "timeout", "rate_limit", "server"})
CUE = "(请继续 / your turn)"
"""The user message sent when a request would otherwise have none."""

_CONTEXT = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|exceeds? the (context|max)"
    r"|prompt is too long|context_length_exceeded",
    re.IGNORECASE,
)


class ModelCallError(ModelError):
    """A model call failed; ``kind`` says how, the message says what to check."""

    def __init__(self, message: str, *, kind: ErrorKind, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.attempts = attempts


def classify(exc: BaseException) -> ErrorKind:
    """What kind of failure ``exc`` is (works on openai's and httpx's exception types by name)."""
    if isinstance(exc, ModelCallError):
        return exc.kind
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    text = str(exc)
    if _CONTEXT.search(text):
        return "context_length"
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError", "ReadTimeout"}:
        return "timeout"
    if names & {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError"}:
        return "connection"
    if status == 429 or "RateLimitError" in names:
        return "rate_limit"
    if isinstance(status, int) and status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    if isinstance(status, int) and 400 <= status < 500:
        return "request"
    return "other"


def explain(exc: BaseException, kind: ErrorKind, profile: ModelProfile, attempts: int) -> str:
    """A message a person can act on: what failed, where, and what to check."""
    detail = f"{type(exc).__name__}: {exc}".strip()
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    where, label = profile.where, profile.label
    advice = {
        "connection": f"cannot reach {where}{tries}; check that the server is running and "
        f"that base_url is right (model '{label}')",
        "timeout": f"{where} did not answer in time{tries}; check the server's load, or raise "
        "the model's timeout option",
        "rate_limit": f"{where} is rate-limiting{tries}; wait, or lower the request rate",
        "server": f"{where} failed{tries}; check the server's log",
        "context_length": f"the prompt did not fit the window of '{label}' even after "
        f"shrinking it; set context_window (now {profile.context_window}) to the server's "
        "real window, or lower max_output_tokens",
        "auth": f"{where} refused the API key; check the key variable of model '{label}'",
        "request": f"{where} rejected the request (model '{label}'); check the model name "
        "and options",
        "other": f"model '{label}' failed",
    }[kind]
    return f"{advice} ({detail})"


def _fold(system: str, first: BaseMessage | None) -> HumanMessage:
    text = f"{system}\n\n---"
    if isinstance(first, HumanMessage):
        return HumanMessage(
            content=f"{text}\n\n{first.content}", additional_kwargs=first.additional_kwargs
        )
    return HumanMessage(content=text)


def layout(messages: Sequence[BaseMessage], profile: ModelProfile) -> list[BaseMessage]:
    """Lay ``messages`` out for the model's roles; there is always a user message.

    ``system``: unchanged. ``fold``: the system text opens the first user message (and
    consecutive user messages are merged, since such templates want roles to alternate).
    ``both``: the system message stays and the first user message repeats it. The brief the
    offline doubles read moves with the text.
    """
    out = list(messages)
    if not any(isinstance(m, HumanMessage) for m in out):
        # Right after the instructions, so a tool exchange that follows keeps its order.
        at = sum(1 for m in out if isinstance(m, SystemMessage))
        out.insert(at, HumanMessage(content=CUE))
    if profile.system_role == "system":
        return out
    systems = [m for m in out if isinstance(m, SystemMessage)]
    if not systems:
        return out
    system_text = "\n\n".join(str(m.content) for m in systems)
    brief = next(
        (m.additional_kwargs[BRIEF_KEY] for m in systems if BRIEF_KEY in m.additional_kwargs), None
    )
    rest = [m for m in out if not isinstance(m, SystemMessage)]
    first = rest[0] if rest else None
    folded = _fold(system_text, first)
    if brief is not None:
        folded.additional_kwargs[BRIEF_KEY] = brief
    tail = rest[1:] if isinstance(first, HumanMessage) else rest
    merged: list[BaseMessage] = [folded]
    for message in tail:
        last = merged[-1]
        if (
            profile.system_role == "fold"
            and isinstance(message, HumanMessage)
            and type(last) is HumanMessage
        ):
            merged[-1] = HumanMessage(
                content=f"{last.content}\n\n{message.content}",
                additional_kwargs=last.additional_kwargs,
            )
        else:
            merged.append(message)
    return [*systems, *merged] if profile.system_role == "both" else merged


async def call_model(
    runnable: Runnable[LanguageModelInput, Any],
    messages: Sequence[BaseMessage],
    profile: ModelProfile,
    *,
    retries: int = 2,
    backoff: float = 1.0,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> AIMessage:
    """Call the model with ``messages`` laid out for it; retry transient failures.

    Raises :class:`ModelCallError` (``kind`` tells a context overflow, which the caller may
    shrink and retry, from a failure to report).
    """
    request = layout(messages, profile)
    attempt = 0
    while True:
        attempt += 1
        try:
            response = await runnable.ainvoke(request)
        except Exception as exc:  # providers raise anything; classify and name it
            kind = classify(exc)
            if kind in TRANSIENT and attempt <= retries:
                await sleep(backoff * 2 ** (attempt - 1))
                continue
            raise ModelCallError(
                explain(exc, kind, profile, attempt), kind=kind, attempts=attempt
            ) from exc
        if not isinstance(response, AIMessage):
            response = AIMessage(content=str(getattr(response, "content", response)))
        return response


def text_of(message: BaseMessage) -> str:
    """The text of a message whose content may be a string or a list of parts."""
    if isinstance(message.content, str):
        return message.content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in message.content]
    return "".join(parts)
