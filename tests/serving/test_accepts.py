"""A message is checked once, by the room: what a surface asks before it queues a message
(``Room.accepts``, the server's early 400) is the room's own answer, the same as posting to
the room or through the gateway gives, and what it accepted goes through unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from framework import Settings, Staffroom
from framework.errors import InputError
from framework.serving import Gateway
from framework.sessions.events import EventKind


async def test_a_surface_asking_first_gets_the_answer_the_room_gives_when_posted_to(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r20", scenario)
        before = len(room.history())
        for text, author in [("   ", "alice"), ("hi", "../etc"), ("hi", "")]:
            with pytest.raises(InputError) as asked:
                room.accepts(text, author=author)
            with pytest.raises(InputError) as posted:
                async for _ in room.post(text, author=author):
                    pass
            with pytest.raises(InputError) as through_gateway:
                await gateway.post(room.key, text, author=author)
            said = {(e.value.field, e.value.message, e.value.fix) for e in (asked, posted)}
            assert said == {(through_gateway.value.field, through_gateway.value.message,
                             through_gateway.value.fix)}, text  # fmt: skip
        assert len(room.history()) == before, "nothing refused was stored"

        accepted = room.accepts("can someone look at ticket 4411?")
        assert accepted.author == "alice", "no author: the room's first human"
        await gateway.post(room.key, accepted)
        said = [e for e in room.history() if e.kind == EventKind.MESSAGE and e.meta.get("human")]
        assert [(e.author, e.content) for e in said] == [
            ("alice", "can someone look at ticket 4411?")
        ]
        await gateway.close()


async def test_a_rooms_first_message_is_refused_as_a_post_to_the_room_is(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        for text, author in [("   ", "alice"), ("hi", "../etc"), ("hi", "")]:
            with pytest.raises(InputError) as opened:
                await gateway.open_room("r21", scenario, message=text, author=author)
            room = await gateway.session("room:r21")
            with pytest.raises(InputError) as asked:
                room.accepts(text, author=author)
            assert (opened.value.field, opened.value.message, opened.value.fix) == (
                asked.value.field,
                asked.value.message,
                asked.value.fix,
            ), text
        await gateway.close()
