"""Confirming a remark over HTTP: ``POST .../messages`` with ``reply_to`` naming the remark the
room understood. A yes replying to it counts the remark in the run's outcome; a yes replying to
anything else confirms nothing; a ``reply_to`` the session does not hold is a 400.

The room's first employee (pm) answers from a script, as a real model would (its reading of
the remark is the JSON ``read_remark.j2`` asks for); the others are the offline simulator.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from backend import backend_database
from paths import ROOT
from server_harness import SUPPORT, SUPPORT_ENV

from framework import Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.serving.gateway import Gateway
from framework.specs.model_spec import ModelSpec
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import load_config

REMARK = "配图应该在写正文之前"
ORDER = json.dumps({"corrections": [{"kind": "order", "step": 3, "before": 2}]})
MOVE = json.dumps({"edits": [{"op": "move", "step": 3, "to": 2, "reason": "作者要求先配图"}]})
Auth = Callable[[str], dict[str, str]]
Served = tuple[httpx.AsyncClient, Path]


@pytest.fixture
async def served(
    tmp_path: Path, server_yaml: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Served]:
    """The app in this process over ASGI; pm reads remarks from ``request.param``'s script."""
    model = ScriptedChatModel(replies=request.param)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, project_dir=ROOT, allow_network=False, database=backend_database()
    )
    config = load_config(server_yaml, environ={SUPPORT_ENV: SUPPORT})
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        # tech-article@2: as @1, but it also pauses after step 1 (a remark said there).
        v1 = await staff.sops.store.get("tech-article", 1)
        steps = (replace(v1.steps[0], waits_for_input=True), *v1.steps[1:])
        await staff.sops.store.add_version(replace(v1, version=2, steps=steps, change_log=()))
        await staff.sops.store.publish("tech-article", 2)
        await staff.sops.store.deprecate("tech-article", 1, "test: two pauses")
        gateway = await Gateway.open(staff)
        transport = httpx.ASGITransport(app=create_app(gateway, config))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client, data
        await gateway.close()


ROOM = "/api/sessions/room%3Asupport-r1"


async def opened(api: httpx.AsyncClient, headers: dict[str, str]) -> None:
    """Open room:support-r1 and wait until step 1 pauses for the author (polled)."""
    put = await api.put("/api/rooms/support-r1", json={"scenario": "tech-article"}, headers=headers)
    assert put.status_code == 200, put.text
    for _ in range(1200):
        status = (await api.get(f"{ROOM}/status", headers=headers)).json()
        if status["room"]["waiting"] and not status["busy"]:
            return
        await asyncio.sleep(0.05)  # the entry runs in the background, as a client sees it
    raise AssertionError("the room never paused")


async def say(api: httpx.AsyncClient, headers: dict[str, str], text: str, **extra: Any) -> Any:
    """Post ``text`` as the author and wait for its run; the response body."""
    body = {"text": text, "author": "author", **extra}
    posted = await api.post(f"{ROOM}/messages", json=body, headers=headers)
    assert posted.status_code == 200, posted.text
    return posted.json()


def remarks(events: list[dict[str, Any]], status: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "remark" and e["content"]["status"] == status]


async def finish(api: httpx.AsyncClient, headers: dict[str, str], events: list[Any]) -> list[Any]:
    """Say "继续" at every pause until the run closes; all the events."""
    while not any(e["kind"] == "feedback" for e in events):
        events += (await say(api, headers, "继续"))["events"]
    return events


def corrections(events: list[dict[str, Any]]) -> int:
    return int(next(e for e in events if e["kind"] == "feedback")["content"]["corrections"])


@pytest.mark.parametrize("served", [["提纲已写好。", ORDER, "定稿完成。", MOVE]], indirect=True)
async def test_a_yes_replying_to_the_remark_confirms_it_and_it_counts(
    served: Served, auth: Auth
) -> None:
    api, _ = served
    headers = auth("support")
    await opened(api, headers)
    said = (await say(api, headers, REMARK))["events"]
    [understood] = remarks(said, "understood")

    reply = (await say(api, headers, "对", reply_to=understood["id"]))["events"]
    assert reply[0]["meta"]["reply_to"] == understood["id"], "kept on the message"
    [confirmed] = remarks(reply, "confirmed")
    assert confirmed["content"]["understood"] == understood["id"]
    assert corrections(await finish(api, headers, reply)) == 1


@pytest.mark.parametrize("served", [["提纲已写好。", ORDER, "定稿完成。"]], indirect=True)
async def test_a_yes_replying_to_anything_else_confirms_nothing(served: Served, auth: Auth) -> None:
    api, _ = served
    headers = auth("support")
    await opened(api, headers)
    said = (await say(api, headers, REMARK))["events"]
    assert remarks(said, "understood")
    employee = next(e for e in said if e["kind"] == "message" and not e["meta"].get("human"))

    reply = (await say(api, headers, "对", reply_to=employee["id"]))["events"]
    assert not remarks(reply, "confirmed")
    rest = await finish(api, headers, reply)
    assert not remarks(rest, "confirmed") and corrections(rest) == 0


@pytest.mark.parametrize("served", [["提纲已写好。"]], indirect=True)
async def test_a_reply_to_no_event_of_the_session_is_refused(served: Served, auth: Auth) -> None:
    api, data = served
    headers = auth("support")
    await opened(api, headers)
    before = (await api.get(f"{ROOM}/history", headers=headers)).json()["events"]
    for bad in ["no-such-event", "../../etc/passwd", "x" * 200]:
        body = {"text": "对", "author": "author", "reply_to": bad}
        refused = await api.post(f"{ROOM}/messages", json=body, headers=headers)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["field"] == "reply_to" and error["fix"]
        assert str(data) not in refused.text and "Traceback" not in refused.text
    malformed = {"text": "对", "author": "author", "reply_to": "has spaces"}
    shape = await api.post(f"{ROOM}/messages", json=malformed, headers=headers)
    assert shape.status_code == 422 and shape.json()["error"]["field"].endswith("reply_to")
    after = (await api.get(f"{ROOM}/history", headers=headers)).json()["events"]
    assert after == before, "nothing was posted"
