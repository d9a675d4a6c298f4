"""A room's first message over HTTP (``PUT /api/rooms/{id}`` with ``message``) is accepted as a
posted message is: through the ingest ledger, under the client's ``message_id`` or
``Idempotency-Key``. The same open sent again, even at the same moment, posts one message,
and the id is the same message for ``POST .../messages`` too. Replies come from the offline
simulator (a test double)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

TICKET = "Ticket #4411 from Acme Corp - checkout API returns HTTP 502."
Auth = Callable[[str], dict[str, str]]


def room_path(room_id: str) -> str:
    return f"/api/sessions/room%3A{room_id}"


async def settled(api: httpx.AsyncClient, room_id: str, headers: dict[str, str]) -> None:
    """Until the room waits for its people and its lane is idle (polled, as a client does)."""
    for _ in range(1200):
        status = await api.get(f"{room_path(room_id)}/status", headers=headers)
        data = status.json()
        if status.status_code == 200 and data["room"]["waiting"] and not data["busy"]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the room never settled")


async def people_said(api: httpx.AsyncClient, room_id: str, headers: dict[str, str]) -> list[Any]:
    page = await api.get(f"{room_path(room_id)}/history", params={"limit": 1000}, headers=headers)
    assert page.status_code == 200, page.text
    events = page.json()["events"]
    return [e for e in events if e["kind"] == "message" and e["meta"].get("human")]


async def test_the_same_open_sent_twice_at_once_posts_its_message_once(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    headers = auth("support")
    body = {"scenario": "tech-article", "message": TICKET, "message_id": "crm-4411"}
    opened = await asyncio.gather(
        *(api.put("/api/rooms/support-41", json=body, headers=headers) for _ in range(2))
    )
    assert [r.status_code for r in opened] == [200, 200], [r.text for r in opened]
    await settled(api, "support-41", headers)
    retried = await api.put("/api/rooms/support-41", json=body, headers=headers)
    assert retried.status_code == 200, retried.text
    await settled(api, "support-41", headers)

    said = await people_said(api, "support-41", headers)
    assert [(e["content"], e["meta"].get("client_id")) for e in said] == [(TICKET, "crm-4411")]
    assert said[0]["meta"]["opening"] is True, "the room entered with it"

    # The id names that message for POST .../messages as well: a duplicate, not a 2nd post.
    again = await api.post(
        f"{room_path('support-41')}/messages",
        json={"text": TICKET, "author": "author", "message_id": "crm-4411"},
        headers=headers,
    )
    assert again.status_code == 200, again.text
    assert again.json()["duplicate"] is True
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(await people_said(api, "support-41", headers)) == 1


async def test_an_idempotency_key_makes_a_retried_open_post_once(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    headers = auth("support") | {"Idempotency-Key": "open-support-42"}
    body = {"scenario": "tech-article", "message": TICKET}
    opened = await asyncio.gather(
        *(api.put("/api/rooms/support-42", json=body, headers=headers) for _ in range(3))
    )
    assert {r.status_code for r in opened} == {200}, [r.text for r in opened]
    await settled(api, "support-42", headers)
    # A retry that lost its answer, with the text re-encoded by the client: still one message.
    retry = body | {"message": TICKET + " "}
    assert (await api.put("/api/rooms/support-42", json=retry, headers=headers)).status_code == 200
    await settled(api, "support-42", headers)
    assert [e["content"] for e in await people_said(api, "support-42", headers)] == [TICKET]


async def test_an_open_id_is_one_persons(api: httpx.AsyncClient, auth: Auth) -> None:
    body = {"scenario": "tech-article", "message": TICKET, "message_id": "crm-4412"}
    headers = auth("support")
    first = await api.put("/api/rooms/support-43", json=body, headers=headers)
    assert first.status_code == 200, first.text
    await settled(api, "support-43", headers)
    other = await api.put("/api/rooms/support-43", json=body | {"author": "alice"}, headers=headers)
    assert other.status_code == 400, other.text
    assert other.json()["error"]["field"] == "message_id"
    assert [e["author"] for e in await people_said(api, "support-43", headers)] == ["author"]
