"""The framework's promises against a real (weak) model: Gemma 3 270M on llama.cpp's server.

These check what Staffroom guarantees whatever the model answers, not the model's quality:
a room ends or waits with a recorded reason, no request exceeds the window, the output cap
holds, every fallback is recorded, DM memory and consolidation run, and an SOP revision is
proposed. Run with ``make test-llm``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paths import ROOT

from framework import Event, EventKind, Settings, Staffroom
from framework.specs.model_spec import ModelSpec

pytestmark = pytest.mark.llm

WINDOW = 4096  # the server's --n_ctx (tests/llm/serve.py)
CAP = 96


def settings_for(tmp_path: Path, url: str, name: str) -> Settings:
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": name,
            "base_url": url,
            "context_window": WINDOW,
            "max_output_tokens": CAP,
            "system_role": "fold",
        }
    )
    return Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,  # loopback only: the local server is allowed, nothing else
        model_override=spec,
        model_backoff=0.2,
    )


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def check_requests(events: list[Event]) -> None:
    """Every answered call stayed in the window and under the cap (the server's own counts)."""
    replies = [e for e in events if e.kind == EventKind.MESSAGE and "usage" in e.meta]
    assert replies, "no model reply was recorded"
    for reply in replies:
        usage = reply.meta["usage"]
        assert usage["window"] == WINDOW
        assert 0 < usage["max_request_tokens"] <= WINDOW
        assert usage["output_tokens"] <= CAP * usage["calls"]


def check_errors_are_explained(events: list[Event]) -> None:
    for event in events:
        if event.kind == EventKind.ERROR:
            assert event.content.get("detail"), event.content
        if event.kind == EventKind.FALLBACK:
            assert event.content.get("reason") and event.content.get("used"), event.content


async def test_sample_scenario_ends_or_waits_with_a_reason(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    lines = [
        "方向没问题，正文保持 3000 字以内，继续。\n纠正: order 3 before 2 先定配图再写正文",
        "评分: 2/5",
    ]
    async with await Staffroom.open(settings=settings_for(tmp_path, llm_url, llm_model)) as staff:
        room = await staff.room("llm-1", "tech-article")
        events = await collect(room.start())
        for line in lines:
            status = await room.status()
            if not status.waiting:
                break
            if status.wait_reason == "model_error":
                events += await collect(room.retry())
                continue
            events += await collect(room.post(line, author="author"))
        status = await room.status()
        ended = [e for e in events if e.kind == EventKind.OUTCOME]
        # Complete, or waiting with a recorded reason: never stuck without one.
        assert ended or (status.waiting and status.wait_reason), status
        if status.wait_reason == "model_error":
            assert status.error
        check_requests(events)
        check_errors_are_explained(events)
        assert not [
            e
            for e in events
            if e.kind == EventKind.ERROR and e.content.get("kind") == "context_length"
        ]
        if ended:
            feedback = next(e for e in events if e.kind == EventKind.FEEDBACK)
            said = next((e for e in events if e.kind == EventKind.REVISION), None)
            # The correction asks for a change: the model's edits or the rules' (with why).
            assert said is not None, feedback.content
            revision = said.content
            version = await staff.sops.store.get(*_ref(revision["sop"]))
            by = version.change_log[-1].by or ""
            assert by.startswith(("model:", "rules")), by
            if by.startswith("rules ("):
                assert [e for e in events if e.kind == EventKind.FALLBACK]


def _ref(ref: str) -> tuple[str, int]:
    sop_id, _, number = ref.rpartition("@")
    return sop_id, int(number)


async def test_dm_memory_and_consolidation_run(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    lines = [
        "以后回我用英文吧",
        "我叫 Alice，在做数字员工平台。",
        "今天的计划？",
        "先列三件事。",
        "第一件展开说说。",
        "好的，谢谢。",
    ]
    async with await Staffroom.open(settings=settings_for(tmp_path, llm_url, llm_model)) as staff:
        dm = await staff.dm("pm", "alice")
        events: list[Event] = []
        for line in lines:
            events += await collect(dm.post(line, author="alice"))
        check_requests(events)
        check_errors_are_explained(events)
        report = await dm.consolidate(force=True)
        assert report.batches >= 1 and report.history_lines >= 1
        # Either the model's summary was used, or the fallback says why.
        assert report.summarised_by
        if report.fallbacks:
            assert all(reason for reason in report.fallbacks)
            assert [e for e in dm.history() if e.kind == EventKind.FALLBACK]
        history = staff.memory.history(dm.key).recent(4000)
        assert history.strip()
        # The memory page's example: the preference is kept, by the model's memory tool or, when the
        # model ignores the tool (this server never emits tool calls), by the statement rule
        # with a fallback event saying so.
        doc = staff.memory.memory("pm", "alice").read()
        assert "偏好语言: English" in doc.sections["preferences"]
        called = [e for e in events if e.kind == EventKind.TOOL_CALL]
        ruled = [
            e for e in events if e.kind == EventKind.FALLBACK and e.content["what"] == "memory"
        ]
        assert called or ruled
