"""A room and a DM on an OpenAI-compatible server (the recording stub): budgets, caps, roles,
retries and errors, as a real llama.cpp server would exercise them."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

from stub_openai import StubOpenAI

from framework import Event, EventKind, Settings, Staffroom
from framework.memory.memory_tool import RULE_REASON
from framework.runtime.prompt_budget import estimate_tokens
from framework.specs.model_spec import ModelSpec

WINDOW = 4096
CAP = 200


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def local(stub: StubOpenAI, **extra: object) -> ModelSpec:
    fields: dict[str, object] = {
        "provider": "openai",
        "name": "gemma-3-270m",
        "base_url": stub.base_url,
        "context_window": WINDOW,
        "max_output_tokens": CAP,
        "system_role": "fold",
        # Budgets and roles here; a stub's prose at a producing step would otherwise be asked
        # again as JSON (`auto`), which tests/runtime/test_json_tools.py covers.
        "tool_calling": "native",
    }
    fields.update(extra)
    return ModelSpec.model_validate(fields)


def with_model(settings: Settings, spec: ModelSpec, **extra: object) -> Settings:
    return settings.model_copy(update={"model_override": spec, "model_retries": 1, **extra})


def request_text(body: dict[str, object]) -> str:
    messages = body.get("messages")
    assert isinstance(messages, list)
    return "\n".join(str(m.get("content") or "") for m in messages)


async def test_one_huge_reply_never_wedges_the_room(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    # The reported failure: one 13,333-character reply, then every request overflowed.
    stub_openai.n_ctx = WINDOW
    stub_openai.reply("很长的提纲。" * 2222)  # 13,332 characters, about 13k tokens
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        room = await staff.room("huge-1", "tech-article")
        events = await collect(room.start())
        events += await collect(room.post("方向没问题，继续。", author="author"))
        replies = [e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human")]
        assert len(replies) == 4  # every step answered: nothing stuck
        assert not [e for e in events if e.kind == EventKind.ERROR]
        requests = [request_text(r.body) for r in stub_openai.completions]
        assert all(estimate_tokens(text) + CAP < WINDOW for text in requests)
        for text in requests[1:4]:  # the next three turns (then the SOP reviser's request)
            # The huge message went out cut, with a pointer to the full text in the history.
            assert "characters cut; full text: event" in text
        assert all(e.meta["usage"]["window"] == WINDOW for e in replies)


async def test_context_overflow_shrinks_once_then_records_an_error(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.context_length_error().reply("缩短后的回答")
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("你好", author="alice"))
        first, second = (request_text(r.body) for r in stub_openai.completions)
        assert len(second) <= len(first)
        fallbacks = [e for e in events if e.kind in (EventKind.FALLBACK, EventKind.ERROR)]
        assert fallbacks and "context" in str(fallbacks[0].content).lower()
        assert [e.text for e in events if e.author == "pm" and e.kind == EventKind.MESSAGE] == [
            "缩短后的回答"
        ]
        # Twice in a row: an error a person can act on, and the DM still answers next time.
        stub_openai.context_length_error().context_length_error().reply("好了")
        failed = await collect(dm.post("再来", author="alice"))
        error = next(e for e in failed if e.kind == EventKind.ERROR)
        assert error.content["kind"] == "context_length"
        assert "context_window" in error.content["detail"]
        ok = await collect(dm.post("在吗", author="alice"))
        assert [e.text for e in ok if e.kind == EventKind.MESSAGE and e.author == "pm"] == ["好了"]


async def test_output_cap_is_sent_in_both_fields_to_local_servers(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        dm = await staff.dm("pm", "alice")
        await collect(dm.post("你好", author="alice"))
    body = stub_openai.completions[0].body
    assert body["max_tokens"] == CAP and body["max_completion_tokens"] == CAP


async def test_official_endpoint_gets_max_completion_tokens_only(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    spec = local(stub_openai, cap_field="max_completion_tokens")
    async with await Staffroom.open(settings=with_model(settings, spec)) as staff:
        dm = await staff.dm("pm", "alice")
        await collect(dm.post("你好", author="alice"))
    body = stub_openai.completions[0].body
    assert body["max_completion_tokens"] == CAP and "max_tokens" not in body


async def test_fold_sends_instructions_in_the_first_user_message(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        room = await staff.room("fold-1", "tech-article")
        await collect(room.start())
    first = stub_openai.completions[0].body["messages"]
    # The first room turn: no system role at all, one user message carrying the role card,
    # the SOP step and the cue, so a template without a system role still sees them.
    assert [m["role"] for m in first] == ["user"]
    assert "产品经理小P" in first[0]["content"] and "SOP 第 1 步" in first[0]["content"]
    later = stub_openai.completions[-1].body["messages"]
    roles = [m["role"] for m in later]
    assert "system" not in roles
    assert all(a != b for a, b in itertools.pairwise(roles))  # roles alternate


async def test_system_role_both_and_system(settings: Settings, stub_openai: StubOpenAI) -> None:
    for role, expected in (("both", ["system", "user"]), ("system", ["system", "user"])):
        spec = local(stub_openai, system_role=role)
        async with await Staffroom.open(settings=with_model(settings, spec)) as staff:
            room = await staff.room(f"roles-{role}", "tech-article")
            await collect(room.start())
        sent = stub_openai.completions[-1].body["messages"][:2]
        assert [m["role"] for m in sent] == expected
        if role == "both":
            assert "产品经理小P" in sent[1]["content"]
        stub_openai.requests.clear()


async def test_transient_errors_are_retried_with_backoff(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.error(503).drop().reply("恢复了")
    spec = local(stub_openai)
    async with await Staffroom.open(settings=with_model(settings, spec, model_retries=2)) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("你好", author="alice"))
    assert len(stub_openai.completions) == 3
    assert [e.text for e in events if e.author == "pm"] == ["恢复了"]


async def test_unreachable_server_names_the_url_and_pauses_the_step(settings: Settings) -> None:
    spec = ModelSpec.model_validate(
        {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1"}
    )
    async with await Staffroom.open(settings=with_model(settings, spec)) as staff:
        room = await staff.room("down-1", "tech-article")
        events = await collect(room.start())
        error = next(e for e in events if e.kind == EventKind.ERROR)
        assert error.content["kind"] == "connection"
        assert "http://127.0.0.1:9/v1" in error.content["detail"]
        assert "check that the server is running" in error.content["detail"]
        assert error.content["attempts"] == 2
        status = await room.status()
        assert status.wait_reason == "model_error" and "127.0.0.1:9" in (status.error or "")


async def test_retry_runs_the_failed_step_again_without_a_message(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.error(400, "model not loaded").reply("提纲在此")
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        room = await staff.room("retry-1", "tech-article")
        await collect(room.start())
        assert (await room.status()).wait_reason == "model_error"
        events = await collect(room.retry())
        pm = [e for e in events if e.kind == EventKind.MESSAGE and e.author == "pm"]
        assert pm and pm[0].text == "提纲在此" and pm[0].meta["step"] == 1
        humans = [e for e in room.history() if e.meta.get("human")]
        assert humans == []  # nobody had to post an acknowledgement


async def test_an_empty_reply_is_retried_once_then_an_error(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("").reply("现在有内容了")
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("你好", author="alice"))
        assert [e.text for e in events if e.author == "pm"] == ["现在有内容了"]
        nudge = stub_openai.completions[1].body["messages"][-1]["content"]
        assert "empty" in nudge
        stub_openai.reply("").reply("   ")
        failed = await collect(dm.post("还在吗", author="alice"))
        assert [e.content["error"] for e in failed if e.kind == EventKind.ERROR] == ["empty_reply"]
        assert not [e for e in failed if e.kind == EventKind.MESSAGE and e.author == "pm"]


def test_a_model_works_across_event_loops(settings: Settings, stub_openai: StubOpenAI) -> None:
    # An embedding bot may call asyncio.run() per message; a shared HTTP client bound to the
    # first loop used to fail the second with "Event loop is closed".
    import asyncio

    async def once(text: str) -> list[str]:
        async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
            dm = await staff.dm("pm", "alice")
            events = await collect(dm.post(text, author="alice"))
            return [e.text for e in events if e.author == "pm"]

    assert asyncio.run(once("一")) == ["stub reply"]
    assert asyncio.run(once("二")) == ["stub reply"]


async def test_a_stated_preference_is_kept_when_the_model_ignores_the_memory_tool(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    # llama.cpp's server never returns tool calls unless one is forced: the rule stands in,
    # visibly, and the next prompt carries the preference.
    stub_openai.reply("好的").reply("Sure, in English.")
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("以后回我用英文吧", author="alice"))
        (fallback,) = [e.content for e in events if e.kind == EventKind.FALLBACK]
        assert fallback["what"] == "memory"
        assert fallback["reason"] == RULE_REASON("zh", person="alice")  # the DM's language
        assert "偏好语言: English" in staff.memory.memory("pm", "alice").path.read_text()
        await collect(dm.post("今天的计划？", author="alice"))
        assert "偏好语言: English" in request_text(stub_openai.completions[-1].body)
        assert not [e for e in dm.history() if e.kind == EventKind.FALLBACK][1:]  # once only


async def test_a_window_without_a_cap_still_fits_on_a_strict_server(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    # OpenAI's rule (prompt + requested cap must fit); the cap defaults to half the window.
    stub_openai.n_ctx = 2048
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": "m",
            "base_url": stub_openai.base_url,
            "context_window": 2048,
        }
    )
    async with await Staffroom.open(settings=with_model(settings, spec)) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("你好", author="alice"))
    assert [e.text for e in events if e.author == "pm"] == ["stub reply"]
    assert stub_openai.completions[0].body["max_tokens"] == 1024


async def test_a_long_tool_argument_is_cut_in_later_rounds(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    content = "大纲内容。" * 1600  # 8,000 characters written in one call
    stub_openai.tool_call("write_file", {"path": "outline.md", "content": content}).reply("写好了")
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        room = await staff.room("args-1", "tech-article")
        events = await collect(room.start())
        assert room.workspace.read_text("outline.md") == content  # the tool got it whole
    second = stub_openai.completions[1].body["messages"]
    call = next(m for m in second if m.get("tool_calls"))
    sent = call["tool_calls"][0]["function"]["arguments"]
    assert len(sent) < 2000 and "full arguments are in the session history" in sent
    reply = next(e for e in events if e.kind == EventKind.MESSAGE)
    assert reply.meta["usage"]["prompt_estimate"] + CAP < WINDOW


async def test_a_turn_that_only_calls_tools_fails_on_the_loop_limit_not_as_empty(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    for i in range(4):
        stub_openai.tool_call("write_file", {"path": f"f{i}.md", "content": "x"})
    async with await Staffroom.open(settings=with_model(settings, local(stub_openai))) as staff:
        dm = await staff.dm("engineer", "alice")
        events = await collect(dm.post("写文件", author="alice"))
    errors = [e.content["error"] for e in events if e.kind == EventKind.ERROR]
    assert errors == ["tool_loop_limit"]
