"""Token budgets: estimates, cutting one message, fitting a whole request."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from framework.runtime.prompt_budget import (
    cut_text,
    estimate_tokens,
    fit_messages,
    make_budget,
    total_tokens,
)


def test_chinese_counts_per_character_and_latin_per_three() -> None:
    assert estimate_tokens("技术评估") == 4
    assert estimate_tokens("abcdefghi") == 3
    assert estimate_tokens("评估 ok") == 2 + 1


def test_cut_keeps_head_and_tail_and_says_where_the_rest_is() -> None:
    text = "开头" + "正文" * 5000 + "结尾"
    cut = cut_text(text, 300, "full text: event e1 in room:x")
    assert cut.startswith("开头") and cut.endswith("结尾")
    assert "characters cut; full text: event e1 in room:x" in cut
    assert estimate_tokens(cut) <= 300
    assert cut_text("short", 300, "p") == "short"


def test_fit_cuts_long_messages_drops_the_oldest_and_keeps_the_newest() -> None:
    budget = make_budget(1000, system_share=0.5, message_tokens=200)
    messages = [
        SystemMessage(content="规则。" * 2000),
        HumanMessage(content="old " * 3000),
        AIMessage(content="很长的回答。" * 3000),
        HumanMessage(content="newest question"),
    ]
    fitted = fit_messages(messages, budget, {1: "event a", 2: "event b"})
    assert total_tokens(fitted) <= budget.input
    assert isinstance(fitted[0], SystemMessage) and fitted[-1].content == "newest question"
    assert any("event b" in str(m.content) for m in fitted)  # the reply was cut, not lost


def test_a_tool_exchange_is_never_split() -> None:
    budget = make_budget(300, system_share=0.3, message_tokens=100)
    call = AIMessage(
        content="", tool_calls=[{"name": "read_file", "args": {"path": "a"}, "id": "c1"}]
    )
    messages = [
        SystemMessage(content="s"),
        HumanMessage(content="q " * 500),
        call,
        ToolMessage(content="x" * 3000, tool_call_id="c1"),
    ]
    fitted = fit_messages(messages, budget)
    assert call in fitted
    assert any(isinstance(m, ToolMessage) for m in fitted)
    assert total_tokens(fitted) <= budget.input


def test_shrunk_budget_is_tighter() -> None:
    budget = make_budget(3000, system_share=0.5, message_tokens=600)
    smaller = budget.shrunk()
    assert smaller.input < budget.input and smaller.message < budget.message
