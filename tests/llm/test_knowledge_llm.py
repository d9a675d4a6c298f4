"""The knowledge layers against a real (weak) model: a session end extracts through the
model's structured answer, or the rules stand in and the run says why; nothing hangs.

Run with ``make test-llm``. What the model extracts is not judged (a 270M model answers
badly); what is checked is Staffroom's promise: the run finishes, every pass is accounted
for (the model's label, or a recorded fallback), the gate's record is there, and what was
routed is searchable at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_promises import settings_for  # the same server settings (tests/llm is on sys.path)

from framework import EventKind, Staffroom

pytestmark = pytest.mark.llm


async def test_a_session_end_extracts_with_the_model_or_says_why_not(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    lines = [
        "决定：发布前必须先灰度 10% 流量",
        "复盘：上次上线的问题是配置中心缓存没刷新，导致网关限流阈值错误。下次应该加配置校验。",
    ]
    async with await Staffroom.open(settings=settings_for(tmp_path, llm_url, llm_model)) as staff:
        dm = await staff.dm("pm", "alice")
        for line in lines:
            _ = [e async for e in dm.post(line, author="alice")]
        ended = await dm.close()
        [knowledge] = [e for e in ended if e.kind == EventKind.KNOWLEDGE]
        content = knowledge.content
        assert content["by"], "each pass names who extracted"
        model_passes = [b for b in content["by"] if not b.startswith("rules")]
        rule_passes = [b for b in content["by"] if b.startswith("rules")]
        # A pass the rules did instead of the model has a recorded reason, never silence.
        assert len(content["fallbacks"]) >= len(rule_passes)
        assert model_passes or content["fallbacks"]
        assert content["gate"] is not None and "fired" in content["gate"]
        journals = list((tmp_path / "data" / "journals" / "pm").glob("*.md"))
        assert journals, "the journal is written whatever the model says"
        routed = [r for r in content["routed"] if r["to"].startswith("knowledge/")]
        if routed:
            word = routed[0]["text"].split()[0][:4]
            assert (await staff.knowledge.search(word, employee="pm")).hits
