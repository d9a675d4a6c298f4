"""A free remark against a real (weak) model: read as corrections and shown back, or the
fallback says why and how to say it; never silence, never a wait for a confirmation, and
never counted unconfirmed.

Run with ``make test-llm``. Whether a 270M model understands "配图应该在写正文之前" is not
judged; what is checked is Staffroom's promise about what happens either way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_promises import settings_for  # the same server settings (tests/llm is on sys.path)

from framework import Event, EventKind, Staffroom

pytestmark = pytest.mark.llm

REMARK = "配图应该在写正文之前"


async def test_a_free_remark_is_read_or_the_fallback_says_why(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    async with await Staffroom.open(settings=settings_for(tmp_path, llm_url, llm_model)) as staff:
        room = await staff.room("llm-remark", "tech-article")
        events: list[Event] = [e async for e in room.start()]
        # Whatever the room waits for (the author's word, or a model error), the remark is
        # read when it is posted, before anyone answers.
        said = [e async for e in room.post(REMARK, author="author")]
        events += said
        read = [e for e in said if e.kind == EventKind.REMARK and e.content["by"] == "author"]
        fallbacks = [
            e for e in said if e.kind == EventKind.FALLBACK and e.content["what"] == "remark"
        ]
        assert len(read) + len(fallbacks) >= 1, [e.kind for e in said]
        if fallbacks:
            reason = fallbacks[0].content["reason"]
            assert reason.startswith(("model answer unusable", "model call failed")), reason
            assert "纠正: order 3 before 2" in reason  # how to say it so that it counts
        else:
            first = read[0].content
            assert first["read_by"].startswith("model:")
            assert first["status"] in ("understood", "none")
            if first["status"] == "understood":
                assert first["text"].startswith("反馈 1，理解为：") and first["ask"]
        # Read or not, the room never waits for a confirmation.
        assert (await room.status()).wait_reason != "confirm_remark"
        # Never confirmed: whatever was understood does not count in the run's outcome (an
        # employee's own "纠正:" line would, as the model's correction: not the author's).
        if [e for e in events if e.kind == EventKind.FEEDBACK]:
            [outcome] = await staff.sops.store.outcomes("tech-article@1")
            assert [c for c in outcome.corrections if c.by == "author"] == []
