"""Prompt budgets in tokens: estimate, cut one text, fit a whole message list to a window.

Token counts are *estimated* (no tokenizer is loaded): each CJK character (Chinese, Japanese
kana, Korean) counts as one token, other text as one token per ``chars_per_token``
characters (3 by default, on the safe side of the ~4 that English averages), plus a few
tokens per message for the chat template. A server that still finds the prompt too long
answers "context length exceeded"; the turn then shrinks the prompt and retries once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

_WIDE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
PER_MESSAGE = 4
"""Tokens a chat template adds around each message (role markers, separators)."""


def estimate_tokens(text: str, chars_per_token: float = 3.0) -> int:
    """Estimated tokens of ``text`` (see the module docstring)."""
    wide = len(_WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / chars_per_token)


def message_tokens(message: BaseMessage, chars_per_token: float = 3.0) -> int:
    """Estimated tokens of one message, tool calls included."""
    text = message.content if isinstance(message.content, str) else str(message.content)
    extra = ""
    if isinstance(message, AIMessage) and message.tool_calls:
        extra = str([(c["name"], c["args"]) for c in message.tool_calls])
    return estimate_tokens(text + extra, chars_per_token) + PER_MESSAGE


def cut_text(text: str, budget: int, pointer: str, chars_per_token: float = 3.0) -> str:
    """``text`` within ``budget`` tokens: its head and tail around a note saying what was cut.

    ``pointer`` tells the reader where the full text is (an event id in the history).
    """
    if estimate_tokens(text, chars_per_token) <= budget:
        return text
    # Characters per token of this very text, so CJK and Latin both land near the budget.
    ratio = len(text) / max(1, estimate_tokens(text, chars_per_token))
    keep = max(0, int((budget - estimate_tokens(pointer, chars_per_token) - 24) * ratio))
    head, tail = keep * 2 // 3, keep // 3
    cut = len(text) - head - tail
    note = f"\n[… {cut} characters cut; {pointer} …]\n"
    return text[:head] + note + (text[-tail:] if tail else "")


@dataclass(frozen=True, slots=True)
class Budget:
    """How a prompt's tokens are shared out."""

    input: int
    """Tokens the whole prompt may use (window less answer cap and margin)."""
    system: int
    """Tokens the instructions may use."""
    message: int
    """Tokens one earlier message may use."""
    chars_per_token: float = 3.0

    @property
    def tool_output_chars(self) -> int:
        """Characters one tool result may show: a third of the prompt, counted as if every
        character were a token (CJK), so a digest always fits."""
        return max(400, self.input // 3)

    def shrunk(self, factor: float = 0.5) -> Budget:
        """A tighter budget, for the retry after a server said the prompt was too long."""
        return Budget(
            max(64, int(self.input * factor)),
            max(32, int(self.system * factor)),
            max(32, int(self.message * factor)),
            self.chars_per_token,
        )


def make_budget(
    input_tokens: int, *, system_share: float, message_tokens: int, chars_per_token: float = 3.0
) -> Budget:
    """Share ``input_tokens`` out: the system part, and a cap per earlier message."""
    system = int(input_tokens * system_share)
    message = max(32, min(message_tokens, (input_tokens - system) // 2))
    return Budget(input_tokens, system, message, chars_per_token)


def fit_messages(
    messages: Sequence[BaseMessage], budget: Budget, pointer_of: dict[int, str] | None = None
) -> list[BaseMessage]:
    """``messages`` cut and trimmed to ``budget``: the result's estimate is within it.

    The system message is cut to the system budget; every other message to the per-message
    budget (``pointer_of[i]`` says where message ``i``'s full text is). Then the oldest plain
    messages are dropped until the total fits. Messages of a tool exchange (an AI message with
    tool calls and its tool results) are never dropped, only cut, so no tool result loses the
    call it answers; the newest message is always kept.
    """
    cpt = budget.chars_per_token
    pointers = pointer_of or {}
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        limit = budget.system if isinstance(message, SystemMessage) else budget.message
        text = message.content if isinstance(message.content, str) else None
        # Tool results are already within their own budget (a digest with a path to page
        # through); cutting them here would lose that path.
        if isinstance(message, ToolMessage):
            text = None
        if text is not None and estimate_tokens(text, cpt) > limit:
            pointer = pointers.get(i, "the full text is in the session history")
            message = message.model_copy(update={"content": cut_text(text, limit, pointer, cpt)})
        if isinstance(message, AIMessage) and message.tool_calls:
            message = _cut_arguments(message, budget.message, cpt)
        out.append(message)
    total = sum(message_tokens(m, cpt) for m in out)
    droppable = [
        i
        for i, m in enumerate(out[:-1])
        if not isinstance(m, SystemMessage | ToolMessage)
        and not (isinstance(m, AIMessage) and m.tool_calls)
    ]
    dropped: set[int] = set()
    for i in droppable:
        if total <= budget.input:
            break
        dropped.add(i)
        total -= message_tokens(out[i], cpt)
    kept = [m for i, m in enumerate(out) if i not in dropped]
    if total > budget.input:
        # Only unbreakable parts are left: cut everything harder, evenly.
        share = max(16, budget.input // max(1, len(kept)) - PER_MESSAGE)
        kept = [
            m.model_copy(update={"content": cut_text(m.content, share, "cut to fit", cpt)})
            if isinstance(m.content, str)
            else m
            for m in kept
        ]
    return kept


def _cut_arguments(message: AIMessage, limit: int, cpt: float) -> AIMessage:
    """``message`` with long string arguments of its tool calls cut (a write_file's content
    would otherwise be re-sent whole on every later round of the turn)."""
    if message_tokens(message, cpt) <= limit:
        return message
    values = sum(1 for c in message.tool_calls for v in c["args"].values() if isinstance(v, str))
    share = max(32, limit // max(1, values))
    pointer = "the full arguments are in the session history"
    calls = [
        {
            **call,
            "args": {
                k: cut_text(v, share, pointer, cpt) if isinstance(v, str) else v
                for k, v in call["args"].items()
            },
        }
        for call in message.tool_calls
    ]
    # The provider reads tool_calls; a raw copy in additional_kwargs would carry the whole text.
    kwargs = {
        k: v
        for k, v in message.additional_kwargs.items()
        if k not in ("tool_calls", "function_call")
    }
    return message.model_copy(update={"tool_calls": calls, "additional_kwargs": kwargs})


def total_tokens(messages: Sequence[BaseMessage], chars_per_token: float = 3.0) -> int:
    """Estimated tokens of a whole request."""
    return sum(message_tokens(m, chars_per_token) for m in messages)
