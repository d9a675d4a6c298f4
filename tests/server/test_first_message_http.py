"""A room's first message on open (``PUT /api/rooms/{id}`` with ``message``): the room enters
with it, so its first step works on it; the same open again posts it once; it is said by a
person the token may speak for. Replies come from the offline simulator (a test double)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

ROOM = "/api/sessions/room%3Asupport-7"
TICKET = "Ticket #4411 from Acme Corp - checkout API returns HTTP 502."
Auth = Callable[[str], dict[str, str]]


async def open_with(api: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> None:
    """Open room:support-7 (tech-article) with ``body`` and wait until it asks the author."""
    opened = await api.put(
        "/api/rooms/support-7", json={"scenario": "tech-article", **body}, headers=headers
    )
    assert opened.status_code == 200, opened.text
    for _ in range(1200):
        status = await api.get(f"{ROOM}/status", headers=headers)
        if status.status_code == 200 and status.json()["room"]["waiting"]:
            return
        await asyncio.sleep(0.05)  # the run goes on in the background: polled like a client
    raise AssertionError("the room never waited for the author")


async def events_of(api: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    page = await api.get(f"{ROOM}/history", params={"limit": 1000}, headers=headers)
    assert page.status_code == 200, page.text
    return list(page.json()["events"])


async def test_a_room_opened_with_a_message_enters_with_it(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    await open_with(api, auth("support"), message=TICKET)
    events = await events_of(api, auth("support"))
    kinds = [e["kind"] for e in events]
    assert events[0]["kind"] == "message" and events[0]["content"] == TICKET
    assert events[0]["author"] == "author", "the scenario's first human says it"
    assert kinds.index("plan") < kinds.index("sop_step"), "step 1 ran after it, on it"

    await open_with(api, auth("support"), message=TICKET)
    again = await events_of(api, auth("support"))
    humans = [e for e in again if e["kind"] == "message" and e["meta"].get("human")]
    assert len(humans) == 1, "the same open posts its message once"


async def test_the_first_message_is_a_persons_the_token_may_speak_for(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    as_employee = await api.put(
        "/api/rooms/support-8",
        json={"scenario": "tech-article", "message": TICKET, "author": "pm"},
        headers=auth("admin"),
    )
    assert as_employee.status_code == 400, as_employee.text
    assert as_employee.json()["error"]["field"] == "author"
    as_other = await api.put(
        "/api/rooms/support-9",
        json={"scenario": "tech-article", "message": TICKET, "author": "bob"},
        headers=auth("support"),
    )
    assert as_other.status_code == 403, as_other.text
