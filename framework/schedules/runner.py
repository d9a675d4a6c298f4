"""Running one fire of a schedule: start its room, DM turn or reflection, and judge the result.

The fire's message is posted under an id made from the fire's id, so a fire run again (after
its scheduler died mid-run, or on a retry) never posts it twice: the room answers it once and
the run a crash cut short is finished from its checkpoint. With a gateway (``staffroom
serve``) the run's events go to its listeners too, so webhooks and the chat platforms hear a
scheduled run like any other (a room mapped to a platform chat posts its replies there).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

from framework.errors import StaffroomError
from framework.language import language_of
from framework.models.quiet import quiet_ask
from framework.phrases import Language, language_or_default
from framework.runtime.appended import append_outside
from framework.runtime.room import Room
from framework.schedules.delivery import (
    FAILED_NOTICE,
    NEW_THREAD,
    NO_PLATFORMS,
    ChatDelivery,
    delivery_refusal,
    scenario_mismatch,
)
from framework.schedules.fire_store import Fire
from framework.schedules.into_session import (
    delivered_notice,
    delivered_replies,
    fire_replies,
    into_session,
    target_room,
)
from framework.schedules.quiet_digest import quiet_digest
from framework.schedules.timing import render_room_id
from framework.sessions.events import Event, EventKind
from framework.sessions.keys import SessionKey
from framework.specs.schedules_file import Deliver, ScheduleSpec

if TYPE_CHECKING:
    from framework.serving.gateway import Gateway
    from framework.staffroom import Staffroom

__all__ = ["FireResult", "Runner", "fire_message_id"]

_ATTEMPT: ContextVar[int] = ContextVar("staffroom_fire_attempt", default=1)
"""The attempt the running fire is on (its task's own: fires run side by side)."""

SCHEDULER_USER = "scheduler"
"""The author of a scheduled DM's message when the schedule names no user."""

Outcome = Literal["done", "quiet", "failed"]


@dataclass(frozen=True, slots=True)
class FireResult:
    """How one fire ended: ``done`` (something said), ``quiet`` (only "nothing to report"),
    ``failed`` (an error, or the room paused on a model error), and where it ran."""

    state: Outcome
    detail: str
    session: str | None
    events: list[Event] = field(default_factory=list)


def fire_message_id(fire_id: str, attempt: int = 1) -> str:
    """The id a fire's message is posted under: one per fire and attempt (a retry of a turn
    that failed without pausing its room asks again; a re-run of the same attempt, after a
    crash, posts nothing new)."""
    made = "sched-" + "".join(c if c.isalnum() or c in "-_.:@" else "-" for c in fire_id)
    return made if attempt == 1 else f"{made}-r{attempt}"


def answer_to(room: Room, message_id: str) -> list[Event]:
    """What the log holds after ``message_id`` until the next person's message: the answer
    to a fire's message posted again (a take-over, a re-run), which yields nothing new."""
    events = room.history()
    at = next((i for i, e in enumerate(events) if e.id == message_id), None)
    if at is None:
        return []
    after: list[Event] = []
    for event in events[at + 1 :]:
        if event.kind == EventKind.MESSAGE and event.from_person:
            break
        after.append(event)
    return after


class Runner:
    """Runs fires against a Staffroom (and its gateway, when a server runs it).

    ``chat``: the chat platforms a ``deliver: {adapter, chat}`` reaches (the server's
    adapters); None: such fires fail, saying that only a server reaches a platform.
    """

    def __init__(
        self, staff: Staffroom, gateway: Gateway | None = None, chat: ChatDelivery | None = None
    ) -> None:
        self.staff = staff
        self.gateway = gateway
        self.chat = chat
        self._threads: dict[str, str] = {}
        """Fire id -> the thread it opened (its failure notice goes there)."""

    async def run(
        self, name: str, spec: ScheduleSpec, fire: Fire, zone: ZoneInfo, attempt: int = 1
    ) -> FireResult:
        """Run ``fire`` of ``spec`` once (``attempt``: its message's id; see
        :func:`fire_message_id`), and deliver its result into the room or DM its ``deliver``
        names; errors a user can fix come back ``failed``."""
        _ATTEMPT.set(attempt)  # this fire's task only (a runner serves fires side by side)
        return await self._delivered(name, spec, fire, await self._run(name, spec, fire, zone))

    async def _run(self, name: str, spec: ScheduleSpec, fire: Fire, zone: ZoneInfo) -> FireResult:
        try:
            refused = delivery_refusal(name, spec, self.staff.settings.project_dir)
            if refused is not None:  # said, not silently dropped: the result would go nowhere
                raise refused
            if into_session(spec):  # a target that does not exist fails before the run
                await target_room(self.staff, self.gateway, name, spec)
            start = spec.start
            deliver = spec.deliver
            if deliver is not None and deliver.adapter and start.room is not None:
                return await self._in_chat(name, spec, fire, zone, deliver)
            if start.room is not None:
                room_id = render_room_id(start.room.room, fire.due, zone, name)
                room = await self._room(room_id, start.room.scenario)
                if start.room.message is None:  # the room enters on its announcement alone
                    events = [e async for e in room.start()]
                    self._emit(room, events)
                    return await judge(room, events, quiet=spec.quiet)
                return await self._post(
                    name, spec, fire, room, start.room.message, start.room.author
                )
            if start.dm is not None:
                room = await self.staff.dm(start.dm.employee, start.dm.user or SCHEDULER_USER)
                return await self._post(name, spec, fire, room, start.dm.message, room_user(room))
            if start.reflection is not None:
                day = fire.due.astimezone(zone).date()
                return await self._reflect(start.reflection.employee, day)
        except StaffroomError as exc:
            return FireResult("failed", str(exc), None)
        return FireResult("failed", f"schedule {name} starts nothing", None)

    async def retry(
        self, name: str, spec: ScheduleSpec, fire: Fire, zone: ZoneInfo, session: str,
        attempt: int,
    ) -> FireResult:  # fmt: skip
        """Try a failed fire again (``attempt``: 2, 3, ...): a room paused on a model error
        retries that step (the message is posted once); a turn that failed without pausing
        its room (a DM, free chat) is asked again, under the attempt's message id."""
        try:
            room = await self.staff.session(session)
            if (await room.status()).wait_reason == "model_error":
                events = [e async for e in room.retry()]
                deliver = spec.deliver
                if deliver is not None and deliver.adapter and self.chat is not None:
                    thread = deliver.thread or self._threads.get(fire.fire_id)
                    await self.chat.send(
                        deliver.adapter, deliver.chat or "", thread, session, events
                    )
                self._emit(room, events)
                result = await judge(room, events, quiet=spec.quiet)
                return await self._delivered(name, spec, fire, result)
        except StaffroomError as exc:
            return FireResult("failed", str(exc), session)
        return await self.run(name, spec, fire, zone, attempt)

    async def _delivered(
        self, name: str, spec: ScheduleSpec, fire: Fire, result: FireResult
    ) -> FireResult:
        """``result``, its replies appended to the room or DM ``spec`` delivers into (see
        :mod:`framework.schedules.into_session`); failed when they could not be (a retry
        delivers them: the same ids again append nothing twice)."""
        if result.state != "done" or not into_session(spec):
            return result
        try:
            target = await target_room(self.staff, self.gateway, name, spec)
            log = (
                self.staff.sessions.log(SessionKey.parse(result.session))
                if result.session
                else None
            )
            mid = fire_message_id(fire.fire_id, _ATTEMPT.get())  # the attempt that answered
            replies = fire_replies(log, mid, result.events)
            catalog = self.staff.catalog.employees
            names = {
                e.author: catalog[e.author].display_name for e in replies if e.author in catalog
            }
            events = delivered_replies(target, name, fire.fire_id, replies, names)
            self._emit(target, await append_outside(target, events))
        except StaffroomError as exc:
            detail = f"{result.detail}; not delivered: {exc}"
            return FireResult("failed", detail, result.session, result.events)
        detail = f"{result.detail}, delivered into {target.key}"
        return FireResult(result.state, detail, result.session, result.events)

    async def _in_chat(
        self, name: str, spec: ScheduleSpec, fire: Fire, zone: ZoneInfo, deliver: Deliver
    ) -> FireResult:
        """A room fire in the room a platform chat maps to, its replies sent there."""
        adapter, chat, start = deliver.adapter or "", deliver.chat or "", spec.start.room
        assert start is not None  # the caller checked
        if self.chat is None:
            return FireResult("failed", NO_PLATFORMS("en", name=name, adapter=adapter), None)
        place = await self.chat.room(adapter, chat, deliver.thread)
        mismatch = scenario_mismatch(name, spec, place, self.staff.settings.project_dir)
        if mismatch is not None:
            raise mismatch
        if place.mode == "thread" and place.thread is None:  # a thread of its own per fire
            text = start.message or NEW_THREAD(
                language_or_default(self.staff.settings.language), name=name,
                due=f"{fire.due.astimezone(zone):%Y-%m-%d %H:%M}",
            )  # fmt: skip
            author = start.author or (await self._scenario_human(start.scenario))
            thread = await self.chat.open_thread(
                adapter, chat, author, text, fire_message_id(fire.fire_id)
            )
            self._threads[fire.fire_id] = thread
            place = await self.chat.room(adapter, chat, thread)
        room = await self._room(place.room_id, start.scenario)
        if start.message is None:
            events = [e async for e in room.start()]
        else:
            events = await self._posted(name, spec, fire, room, start.message, start.author)
        await self.chat.send(adapter, chat, place.thread, room.key, events)
        self._emit(room, events)  # after: the adapters' listener sends nothing twice
        return await judge(room, events, quiet=spec.quiet)

    async def _scenario_human(self, scenario: str) -> str:
        humans = self.staff.catalog.scenario_by_id(scenario).humans
        return humans[0] if humans else SCHEDULER_USER

    async def notify_failure(
        self, name: str, spec: ScheduleSpec, fire: Fire, zone: ZoneInfo, reason: str,
        attempts: int,
    ) -> bool:  # fmt: skip
        """Tell the schedule's delivery target that ``fire`` failed after ``attempts``
        attempts (the last for ``reason``); True when a notice went out (a platform delivery
        with a server, or into a room or DM's log)."""
        deliver = spec.deliver
        if deliver is None or (deliver.adapter and self.chat is None):
            return False
        message = spec.start.room.message if spec.start.room else None
        message = message or (spec.start.dm.message if spec.start.dm else None)
        fallback = language_or_default(self.staff.settings.language)
        language = language_or_default(language_of(message, fallback) if message else fallback)
        text = FAILED_NOTICE(
            language, name=name, due=f"{fire.due.astimezone(zone):%Y-%m-%d %H:%M %Z}",
            attempts=attempts, reason=reason[:500],
        )  # fmt: skip
        if into_session(spec):
            target = await target_room(self.staff, self.gateway, name, spec)
            notice = delivered_notice(target, name, fire.fire_id, text)
            self._emit(target, await append_outside(target, [notice]))
            return True
        if self.chat is None or deliver.adapter is None:
            return False
        thread = deliver.thread or self._threads.pop(fire.fire_id, None)
        uid = fire_message_id(fire.fire_id) + "-failed"
        await self.chat.notice(deliver.adapter, deliver.chat or "", thread, text, uid)
        return True

    async def _room(self, room_id: str, scenario: str) -> Room:
        if self.gateway is not None:  # the lane's own Room object: one run lock per room
            return await self.gateway.open_room(room_id, scenario, start=False)
        return await self.staff.room(room_id, scenario)

    async def _post(
        self, name: str, spec: ScheduleSpec, fire: Fire, room: Room, text: str, author: str | None
    ) -> FireResult:
        events = await self._posted(name, spec, fire, room, text, author)
        self._emit(room, events)
        return await judge(room, events, quiet=spec.quiet)

    async def _posted(
        self, name: str, spec: ScheduleSpec, fire: Fire, room: Room, text: str, author: str | None
    ) -> list[Event]:
        meta: dict[str, object] = {"schedule": {"id": name, "fire": fire.fire_id}}
        if spec.quiet:
            # The message's own language (a schedule's author writes it in the room's).
            language: Language = language_or_default(language_of(text, "en"))
            digest, items = await quiet_digest(self.staff.knowledge, room.participants, language)
            text = f"{text}\n\n{digest}\n\n{quiet_ask(language)}"
            meta["schedule"] = {"id": name, "fire": fire.fire_id, "quiet": True, "items": items}
        attempt = _ATTEMPT.get()
        if attempt > 1:
            meta["schedule"] = {**meta["schedule"], "attempt": attempt}  # type: ignore[dict-item]
        mid = fire_message_id(fire.fire_id, attempt)
        events = [e async for e in room.post(text, author=author, message_id=mid, meta=meta)]
        # Posted before (a scheduler died after it): judged by the answer the log holds.
        return events or answer_to(room, mid)

    async def _reflect(self, employee: str, day: date) -> FireResult:
        runs = await self.staff.reflect(employee, today=day)
        events = [e for run in runs for e in run.events]
        said = sum(len(run.replies) for run in runs)
        session = runs[0].session if runs else None
        detail = (
            f"{len(runs)} reflection(s) of {employee}, {said} repl{'y' if said == 1 else 'ies'}"
        )
        return FireResult("done", detail, session, events)

    def _emit(self, room: Room, events: Sequence[Event]) -> None:
        if self.gateway is not None:
            for event in events:
                self.gateway.listeners.emit(room.key, event)


async def judge(room: Room, events: Sequence[Event], *, quiet: bool) -> FireResult:
    """The outcome of a fire's run from what it logged and where its room stands."""
    status = await room.status()
    if status.wait_reason == "model_error":
        return FireResult("failed", status.error or "model error", room.key, list(events))
    replies = [e for e in events if e.kind == EventKind.MESSAGE and not e.from_person]
    errors = [e for e in events if e.kind == EventKind.ERROR]
    if quiet and replies and all(e.meta.get("nothing_to_report") for e in replies):
        return FireResult("quiet", "nothing to report", room.key, list(events))
    if not replies and errors:
        return FireResult("failed", str(errors[-1].content)[:300], room.key, list(events))
    detail = f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'}"
    return FireResult("done", detail, room.key, list(events))


def room_user(room: Room) -> str:
    """The person of a DM (its first human)."""
    return room.humans[0]
