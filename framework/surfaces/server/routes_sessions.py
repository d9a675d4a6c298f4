"""``/api/rooms``, ``/api/dms`` and ``/api/sessions``: open sessions, post, read them back.

Session keys travel in the path URL-encoded (``room%3Alaunch-42``, ``dm%3Aalice%40pm``) and are
parsed with :meth:`SessionKey.parse` before anything else, so no path is ever built from raw
input. A post is exactly-once: the same ``message_id`` or ``Idempotency-Key`` returns the first
result again (``duplicate: true``, header ``Idempotent-Replayed: true``), even after a restart;
so is a room's first message given when it is opened. ``reply_to`` names the session's event a
message answers (a yes replying to an understood remark confirms it).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from framework.errors import InputError, UnknownNameError
from framework.names import check_name
from framework.runtime.accepted import Accepted, accept
from framework.sessions.keys import Channel, SessionKey
from framework.specs.limits import MAX_ID_CHARS
from framework.surfaces.server.auth import Principal, require
from framework.surfaces.server.limits import MESSAGE_CHARS
from framework.surfaces.server.problems import ERROR_RESPONSES, Problem
from framework.surfaces.server.state import ServerState, get_state

router = APIRouter(prefix="/api", tags=["sessions"], responses=ERROR_RESPONSES)

MAX_MESSAGE_CHARS = MESSAGE_CHARS
"""Characters one posted message may hold (a long paste; documents belong in the workspace)."""
MAX_PAGE = 1000

NAME_PATTERN = r"^[\w@+\-][\w@+\-.]*$"
"""framework.names' rule, so the OpenAPI document says it; ``check_name`` still decides (it
also refuses ``..`` inside a name)."""
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=NAME_PATTERN, examples=["alice"])]
Key = Annotated[
    str,
    PathParam(
        min_length=3,
        max_length=200,
        description="Session key, URL-encoded: room%3Alaunch-42 or dm%3Aalice%40pm",
        examples=["room:launch-42"],
    ),
]
MessageId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")]
IDEMPOTENCY_KEY = Header(
    alias="Idempotency-Key",
    min_length=1,
    max_length=200,
    description="Retry-safe: the same key in a session returns the first result",
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenRoom(_Body):
    """Which scenario a new room runs (ignored when the room exists with the same one), and
    the room's first message, which its first step works on."""

    scenario: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=NAME_PATTERN,
        examples=["tech-article"],
        description="A scenario id of the project (GET /api/scenarios)",
    )
    message: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        examples=["Ticket #4411 from Acme Corp: checkout API returns HTTP 502"],
        description="The room's first message (its input): posted before the first step "
        "runs; the same message sent again is posted once",
    )
    author: Name | None = Field(
        None, description="Who says the first message (default: the scenario's first human)"
    )
    message_id: MessageId | None = Field(
        None,
        description="Your id for the first message: a retried open is answered once (shared "
        "with POST .../messages: the same id there is the same message)",
    )


class OpenDm(_Body):
    """A one-to-one chat of ``user`` with ``employee``."""

    employee: Name
    user: Name


class PostMessage(_Body):
    """A person's message to a session."""

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, examples=["方向没问题，继续"])
    author: Name | None = Field(None, description="Who says it (default: the first human)")
    message_id: MessageId | None = Field(
        None, description="Your platform's message id: a redelivery is answered once"
    )
    reply_to: MessageId | None = Field(
        None,
        description="The id of an event of this session the message replies to: a yes or no "
        "replying to a remark the room understood confirms or denies it",
    )
    wait: bool = Field(True, description="false: answer 202 once stored; the run goes on")


class SessionRef(BaseModel):
    """A session the caller may see."""

    session: str
    channel: str


class SessionList(BaseModel):
    """The sessions the caller's token may see, sorted by key."""

    sessions: list[SessionRef]


class HistoryPage(BaseModel):
    """Events of a session in log order, after ``after``."""

    session: str
    events: list[dict[str, Any]]
    next_after: str | None = Field(description="Pass as ?after= for the next page")
    more: bool


def parse_key(text: str) -> str:
    """The canonical form of a session key from a URL; 400 when it is not one."""
    return str(SessionKey.parse(text))


async def require_session(state: ServerState, key: str) -> None:
    """404 unless ``key`` is a stored session or one this server opened."""
    if key not in state.gateway.sessions():
        raise UnknownNameError(
            f"there is no session {key}",
            field="session",
            fix="open it first: PUT /api/rooms/{room_id} or POST /api/dms (GET /api/sessions "
            "lists those there are)",
        )


@router.put("/rooms/{room_id}", summary="Open a room (or get it: idempotent)")
async def open_room(
    request: Request,
    room_id: Annotated[
        str,
        PathParam(min_length=1, max_length=128, pattern=NAME_PATTERN, examples=["launch-42"]),
    ],
    body: OpenRoom,
    principal: Annotated[Principal, require("open")],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_KEY] = None,
) -> dict[str, Any]:
    """Open the room ``room_id`` running ``scenario``; the same call again returns it (and
    posts its first message once: by ``message_id``, ``Idempotency-Key``, or its text)."""
    check_name(room_id, field="room_id")
    key = str(SessionKey(Channel.ROOM, room_id))
    principal.check_session(key)
    # Only ids from the project's scenarios/: a path would let a caller load any file.
    check_name(body.scenario, field="scenario")
    state = get_state(request)
    first: Accepted | None = None
    if body.message is not None:  # checked once, here: the token must speak for its author
        humans = state.gateway.staff.catalog.scenario_by_id(body.scenario).humans
        try:
            first = accept(humans, body.message, body.author)
        except InputError as exc:
            if exc.field != "text":
                raise
            # This body calls the text ``message``: the error names the field sent.
            raise InputError(exc.message, field="message", fix="say something") from None
        principal.check_user(first.author)
    await state.gateway.open_room(
        room_id,
        body.scenario,
        message=first,
        message_id=body.message_id,
        idempotency_key=idempotency_key if body.message is not None else None,
    )
    return dict(state.scrub.value((await state.gateway.status(key)).to_dict()))


@router.post("/dms", summary="Open a DM of a user with an employee (idempotent)")
async def open_dm(
    request: Request, body: OpenDm, principal: Annotated[Principal, require("open")]
) -> dict[str, Any]:
    """Open (or get) the DM ``dm:{user}@{employee}``."""
    check_name(body.user, field="user")
    check_name(body.employee, field="employee")
    principal.check_user(body.user)
    principal.check_session(str(SessionKey(Channel.DM, f"{body.user}@{body.employee}")))
    state = get_state(request)
    room = await state.gateway.open_dm(body.employee, body.user)
    return dict(state.scrub.value((await state.gateway.status(room.key)).to_dict()))


@router.get("/sessions", summary="The sessions this token may see")
async def list_sessions(
    request: Request, principal: Annotated[Principal, require("read")]
) -> SessionList:
    """Every session with a log in the data folder that the token's scope covers."""
    keys = get_state(request).gateway.sessions()
    refs = [SessionRef(session=k, channel=k.partition(":")[0]) for k in keys]
    return SessionList(sessions=[r for r in refs if principal.sees(r.session)])


@router.get("/sessions/{key}/history", summary="A session's events, paged")
async def history(
    request: Request,
    key: Key,
    principal: Annotated[Principal, require("read")],
    after: Annotated[
        str | None, Query(max_length=200, description="Event id: only events after it")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> HistoryPage:
    """Events in log order after ``after`` (from the start without it), at most ``limit``."""
    key = parse_key(key)
    principal.check_session(key)
    state = get_state(request)
    await require_session(state, key)
    log = state.gateway.staff.sessions.log(SessionKey.parse(key))
    if after is not None and not log.has(after):
        raise InputError(
            f"session {key} has no event {after!r}",
            field="after",
            fix="pass the id of an event of this session (next_after of the previous page)",
        )
    events: list[dict[str, Any]] = []
    seen = after is None
    more = False
    for event in log.iter_events():
        if not seen:
            seen = event.id == after
            continue
        if len(events) == limit:
            more = True
            break
        events.append(state.scrub.event(event.to_dict()))
    next_after = events[-1]["id"] if events else after
    return HistoryPage(session=key, events=events, next_after=next_after, more=more)


@router.get("/sessions/{key}/status", summary="Where a session stands")
async def status(
    request: Request, key: Key, principal: Annotated[Principal, require("read")]
) -> dict[str, Any]:
    """Waiting for whom, which step of which SOP version, the double-texting policy, whether
    a run is under way and how many messages wait for their turn; with a database, which
    replica holds the room's lease (``lease``: null while nobody runs it)."""
    key = parse_key(key)
    principal.check_session(key)
    state = get_state(request)
    await require_session(state, key)
    shown = (await state.gateway.status(key)).to_dict()
    leases = await state.gateway.staff.stores.leases()
    if leases is not None:
        held = await leases.holder(key)
        shown["lease"] = held and {
            "replica": held.owner,
            "epoch": held.epoch,
            "expires_at": held.expires_at.isoformat(),
        }
    return dict(state.scrub.value(shown))


@router.post(
    "/sessions/{key}/messages",
    summary="Post a person's message",
    responses={
        202: {"description": "Stored and queued (wait=false)"},
        409: {"description": "The room is busy and its policy is reject (room state in body)"},
    },
)
async def post_message(
    request: Request,
    key: Key,
    body: Annotated[PostMessage, Body()],
    principal: Annotated[Principal, require("post")],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_KEY] = None,
) -> JSONResponse:
    """Post ``text`` as ``author``; answers with the message and every event its run caused
    (``wait`` true), or 202 once stored (``wait`` false)."""
    key = parse_key(key)
    principal.check_session(key)
    gateway = get_state(request).gateway
    room = await gateway.session(key)
    message = room.accepts(body.text, author=body.author)  # checked once, here, for them all
    principal.check_user(message.author)
    result = await gateway.post(
        key,
        message,
        message_id=body.message_id,
        idempotency_key=idempotency_key,
        reply_to=body.reply_to,
        wait=body.wait,
        timeout=get_state(request).config.wait_limit,
    )
    content = dict(get_state(request).scrub.value(result.to_dict()))
    content["events"] = [get_state(request).scrub.event(e) for e in content.get("events", [])]
    code = {"queued": 202, "rejected": 409}.get(result.status, 200)
    if result.status == "rejected":
        content["error"] = Problem(
            409,
            "room_busy",
            f"{key} is busy and its double-texting policy is '{result.policy}'",
            fix="send again once the room is idle (see `room` for where it stands)",
        ).body.model_dump()
    headers = {"Idempotent-Replayed": "true"} if result.duplicate else {}
    return JSONResponse(content, status_code=code, headers=headers)


__all__ = [
    "MAX_MESSAGE_CHARS",
    "Key",
    "OpenDm",
    "OpenRoom",
    "PostMessage",
    "parse_key",
    "require_session",
    "router",
]
