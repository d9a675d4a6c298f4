"""A simulated week through the public API, offline: journals, extraction with the gate, routing
to trackers, topic files and the library, isolation, search at once, a reflection session.

The offline simulator is a test double: what is extracted here comes from the people's marked
lines (the rules extractor), never from the simulator pretending to understand.
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest
from paths import ROOT

from framework import Staffroom
from framework.knowledge.library import NotEntitledError
from framework.sessions.events import EventKind

KNOWLEDGE_YAML = """\
isolated:
  readers: [pm]
loading:
  writing: [style]
"""
SECRET = "薪酬调整方案 Q3 奖金池 zebra-7731"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for folder in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / folder, root / folder)
    (root / "knowledge.yaml").write_text(KNOWLEDGE_YAML, encoding="utf-8")
    return root


async def _session(staff: Staffroom, user: str, *lines: str) -> list[dict[str, object]]:
    """One DM session with pm: the person's lines, then the session ends; its knowledge
    event's content (one per session end that extracted something)."""
    room = await staff.dm("pm", user)
    for line in lines:
        _ = [e async for e in room.post(line, author=user)]
    ended = await room.close()
    return [e.content for e in ended if e.kind == EventKind.KNOWLEDGE]


async def test_a_week_of_sessions_fills_every_layer(project: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with await Staffroom.open(data, project_dir=project) as staff:
        kb = staff.knowledge

        # Day 1: a decision, a task for the engineer, a goal.
        [day1] = await _session(
            staff,
            "alice",
            "决定：发布前必须先灰度 10% 流量",
            "任务：整理部署手册 @engineer",
            "目标：本季度把上线事故降到零",
        )
        outcomes = {(r["category"], r["outcome"]) for r in day1["routed"]}  # type: ignore[index]
        assert ("decision", "added") in outcomes and ("goal", "created") in outcomes
        journal = sorted((data / "journals" / "pm").glob("*.md"))
        assert journal, "pm wrote its journal at the session end"
        assert "dm:alice@pm" in journal[0].read_text(encoding="utf-8")
        # engineer is not in this DM: the task stays with pm, waiting for engineer.
        [task] = [t for t in kb.trackers.tasks("pm") if "部署手册" in t.task]
        assert task.waiting_for == "engineer"

        # Day 2: the same task again is not a second task; the decision is known.
        [day2] = await _session(staff, "alice", "任务：整理部署手册 @engineer")
        assert len([t for t in kb.trackers.tasks("pm") if "部署手册" in t.task]) == 1
        assert {r["outcome"] for r in day2["routed"]} <= {"merged", "known"}  # type: ignore[index]

        # Day 3: general knowledge is promoted to the shared library, with its source.
        await _session(staff, "bob", "知识：所有人都要知道 k8s 集群分三批灰度")
        shared = kb.library.store("engineer", "shared").list()
        assert any("三批灰度" in e for t in shared for e in t.entries)
        assert all(t.promoted_from for t in shared)

        # Day 4: a long retrospective with no marked line: the gate fires and says why.
        retro = (
            "复盘：这次上线出了问题，原因是配置中心的缓存没有刷新，导致网关限流阈值错误。"
            "我们发现每次发布都要手工检查配置。下次应该在流水线里加一个配置校验步骤。"
            "大家商量后决定由运维负责每周检查一次告警阈值。"
        ) * 3
        [day4] = await _session(staff, "alice", retro)
        gate = day4["gate"]
        assert gate["fired"] and gate["reasons"], "a rich input with no marked line re-scans"  # type: ignore[index]
        assert len(gate["after"]) > len(gate["before"])  # type: ignore[index,arg-type]

        # Search finds a fact the moment it is written, by a session or by hand.
        found = await kb.search("灰度", employee="pm")
        assert found.hits and any("decision" in h.source or "灰度" in h.snippet for h in found.hits)
        topic = kb.topics("pm").list()[0]
        topic.path.write_text(
            # No digits: a journal heading's clock time ("04:42") would match them too.
            topic.path.read_text(encoding="utf-8") + "- 回滚演练每月一次 walrus-kappa\n",
            encoding="utf-8",
        )
        hand = await kb.search("walrus-kappa", employee="pm")
        assert [h.source for h in hand.hits] == [str(topic.path.resolve())]

        # Isolated material: only entitled readers, never from an open search.
        kb.library.store("pm", "isolated").update("salary", "team", add=[SECRET], note="hr")
        assert (await kb.search("zebra-7731", employee="pm", partition="isolated")).hits
        with pytest.raises(NotEntitledError):
            await kb.search("zebra-7731", employee="engineer", partition="isolated")
        words = [*SECRET.split(), "薪酬", "奖金", "调整", "方案", "zebra", "7731", "Q3"]
        rng = random.Random(7)
        for _ in range(60):
            query = " ".join(rng.sample(words, rng.randint(1, 4)))
            for who in ("pm", "engineer", None):
                hits = (await kb.search(query, employee=who)).hits
                assert not any("isolated" in h.source or h.partition != "open" for h in hits)

        # A week later nothing is due; two weeks on, the standing reflection runs a session.
        assert await staff.reflect("pm", today=date.today() + timedelta(days=3)) == []
        [run] = await staff.reflect("pm", today=date.today() + timedelta(days=15))
        assert run.session == "dm:reflection@pm" and run.days_read >= 1
        assert run.knowledge is not None, "the reflection session's end was extracted"
        again = await staff.reflect("pm", today=date.today() + timedelta(days=15))
        assert again == [], "a run moves the trigger's next due date"

    # Every knowledge event is in the logs, in order, and the trackers hold no duplicate.
    log = data / "sessions" / "dm:alice@pm.jsonl"
    kinds = [json.loads(line)["kind"] for line in log.read_text(encoding="utf-8").splitlines()]
    assert kinds.count("knowledge") == 3
    tasks = [t.task for t in kb.trackers.tasks("pm")]
    assert len(tasks) == len(set(tasks))
