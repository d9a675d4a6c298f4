"""``staffroom run``, ``dm`` and ``history``: the transcript surfaces."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from framework.database.url import redact
from framework.phrases import Language, Phrase
from framework.runtime.room import Room
from framework.sessions.entry import entry_meta, is_entry
from framework.sessions.events import EventKind
from framework.sessions.follow import follow_log
from framework.sessions.keys import Channel, SessionKey
from framework.sessions.payloads import ErrorPayload, payload_of
from framework.settings import Settings
from framework.sop.outcomes import TURN_FAILURES
from framework.sop.ref import SopRef
from framework.specs.sop_card import render_steps
from framework.staffroom import Staffroom
from framework.stores import Stores
from framework.surfaces.cli.console import labels_language
from framework.surfaces.cli.hints import CONTINUE_HINT, HintConsole, Invocation
from framework.surfaces.cli.render import render_event
from framework.surfaces.cli.script import (
    ScriptLine,
    parse_script,
    parse_script_line,
    posted_before_ids,
    read_message,
    read_script,
)

SIMULATED_NOTE = Phrase(
    en="[black on yellow] simulated [/] replies come from the offline simulator, "
    "a deterministic test double (not a real model)",
    zh="[black on yellow] simulated [/] 的回复来自离线模拟器：一个确定性的测试替身（不是真实模型）",
)

MODEL_LINE = Phrase(
    en="model {label} at {where} · window {window} tokens · answers ≤ {cap} · {instructions}",
    zh="模型 {label}，地址 {where} · 上下文 {window} 词元 · 每次回答 ≤ {cap} · {instructions}",
)
INSTRUCTIONS = {
    "system": Phrase(en="instructions as a system message", zh="指令作为 system 消息"),
    "fold": Phrase(en="instructions folded into the user message", zh="指令并入用户消息"),
    "both": Phrase(
        en="instructions as a system message and in the user message",
        zh="指令既作为 system 消息也并入用户消息",
    ),
}


def _names(room: Room) -> dict[str, str]:
    return room.display_names


async def _post(
    console: Console, room: Room, author: str, text: str, message_id: str | None = None
) -> bool:
    """Post and show what follows; True when a model error was the last word."""
    names = _names(room)
    failed = False
    async for event in room.post(text, author=author, message_id=message_id):
        render_event(console, event, names)
        if event.kind == EventKind.MESSAGE and not event.from_person:
            failed = False
        elif isinstance(said := payload_of(event), ErrorPayload) and said.error in TURN_FAILURES:
            failed = True
    return failed


Posting = tuple[str, str, str | None]
"""``(author, text, message_id)``: a script line has a stable id, a typed line none."""


def _postings(room: Room, script: list[ScriptLine]) -> Iterator[Posting]:
    """The script's lines with their stable ids. Lines already in the room are posted again
    all the same: ``Room.post`` neither stores nor answers an id twice, and routes one that
    a killed run stored but never routed."""
    said = [
        (e.id, e.author, e.text)
        for e in room.history()
        if e.kind == EventKind.MESSAGE and e.from_person
    ]
    key = str(room.key)
    return iter(
        [(s.author, s.text, s.message_id(key)) for s in script[posted_before_ids(script, said) :]]
    )


def _next_line(
    lines: Iterator[Posting], humans: list[str], interactive: bool, console: Console
) -> Posting | None:
    """What to post next: the script's next line, then, with ``interactive``, what the
    person types (a malformed line is refused there and asked again)."""
    posting = next(lines, None)
    if posting is not None or not interactive:
        return posting
    while True:
        try:
            typed = console.input(f"[bold green]{humans[0]}>[/] ")
        except EOFError:
            return None
        try:
            parsed = parse_script_line(typed, humans)
        except ValueError as exc:  # say why and ask again: nothing was stored
            console.print(f"[yellow]not posted: {escape(str(exc))}[/]")
            continue
        # A blank line ends the session, as it always has.
        return (parsed[0], parsed[1], None) if parsed is not None else None


def _uses_simulator(room: Room) -> bool:
    return "simulated" in room.model_labels.values()


def _model_error(console: Console, room: Room, error: str | None, command: str) -> int:
    console.print(
        f"[bold red]room {room.key} stopped on a model error:[/] {escape(error or 'see above')}\n"
        f"[yellow]fix it, then run again: {escape(command)}[/] (the failed step is retried)"
    )
    return 1


@dataclass(frozen=True)
class FirstMessage:
    """``run``'s ``--message`` / ``--message-file``: what the room's first step works on."""

    text: str | None = None
    file: Path | None = None

    def read(self, humans: list[str], language: Language) -> tuple[str, str] | None:
        """``(author, text)``, or None when neither was given (:class:`ScriptError` when
        the message is empty or its file cannot be read, said in ``language``)."""
        if self.text is None and self.file is None:
            return None
        return read_message(self.text, self.file, humans, language)


def new_room_id(scenario_id: str, taken: Callable[[str], bool]) -> str:
    """The id of the new room ``run`` opens without ``--room``: the scenario, the time (UTC)
    and four random hex digits, e.g. ``escalation-20260101-093000-5f3a``.

    The time alone let two runs started in the same second share a room: the second silently
    continued the first. The random part keeps them apart, in one process or two; an id that
    is already ``taken`` (its room has a log) is drawn again."""
    stamp = f"{scenario_id}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    while taken(room_id := f"{stamp}-{secrets.token_hex(2)}"):
        pass
    return room_id


async def run_scenario(
    settings: Settings,
    scenario: str,
    room_id: str | None,
    script: Path | None,
    interactive: bool,
    console: Console,
    first: FirstMessage | None = None,
) -> int:
    """Run (or resume) a scenario room, feeding script lines when it waits for people.

    ``first``: the room's first message, posted before its first step (a room that has
    entered gets it as its next message, once). Returns the exit status: 0, or 1 when the
    room stopped on a model error or the last answer failed (script lines are only ever
    posted where the room asks people, never to acknowledge a retry; lines a resumed room
    already had are not posted again).
    """
    # Checked before anything opens: a bad script must not leave a room run to its wait.
    raw_lines = read_script(script) if script is not None else []
    async with await Staffroom.open(settings=settings) as staff:
        spec = staff.catalog.scenario(scenario)
        humans = list(spec.humans)
        script_lines = parse_script(script, raw_lines, humans) if script is not None else []
        # Read before the room opens: nothing runs on a message that cannot be read.
        opening = (first or FirstMessage()).read(humans, labels_language(console))
        if room_id is None:  # "" is not "no room": it is refused as a room id below
            room_id = new_room_id(
                spec.id, lambda i: staff.sessions.log_path(SessionKey(Channel.ROOM, i)).exists()
            )
        room = await staff.room(room_id, spec)
        console.print(f"[bold]room[/] {room.key} · scenario {spec.id} · data {settings.data_dir}")
        _show_models(console, room)
        names = _names(room)
        stopped_on_error = (await room.status()).wait_reason == "model_error"
        author, text = opening if opening is not None else (None, None)
        async for event in room.start(text, author=author):
            render_event(console, event, names)
        if stopped_on_error:
            # Run again after a fix: the step that failed last time is retried first.
            async for event in room.retry():
                render_event(console, event, names)
        lines = _postings(room, script_lines)
        hints = console.hints if isinstance(console, HintConsole) else Invocation()
        again = hints.command("run", scenario, "--room", room_id)
        code = 0
        while True:
            status = await room.status()
            if status.wait_reason == "model_error":
                code = _model_error(console, room, status.error, again)
                break
            nxt = _next_line(lines, humans, interactive, console)
            if nxt is None:
                if status.waiting:
                    hint = CONTINUE_HINT(labels_language(console), command=f"{again} --interactive")
                    console.print(
                        f"[yellow]room {room.key} is waiting for {', '.join(status.waiting_for)}; "
                        f"{escape(hint)}[/] (or --script FILE)"
                    )
                break
            failed = await _post(console, room, *nxt)
            code = 1 if failed else 0  # an answer that failed after the SOP, in free chat
        key = SessionKey.parse(room.key)
        where = settings.data_dir / "checkpoints.sqlite"
        stored = redact(settings.database) if settings.database else where
        console.print(
            f"[dim]history {staff.sessions.log_path(key)} · "
            f"workspace {staff.sessions.workspace(key).root} · "
            f"checkpoint {escape(str(stored))}[/]"
        )
        return code


def _show_models(console: Console, room: Room) -> None:
    if _uses_simulator(room):
        console.print(SIMULATED_NOTE(labels_language(console)))
    real = {p.label: p for p in room.model_profiles.values() if p.label != "simulated"}
    language = labels_language(console)
    for label, profile in real.items():
        line = MODEL_LINE(
            language,
            label=label,
            where=profile.where,
            window=profile.context_window,
            cap=profile.max_output_tokens,
            instructions=INSTRUCTIONS[profile.system_role](language),
        )
        console.print(f"[dim]{escape(line)}[/]")


async def run_dm(settings: Settings, employee: str, user: str, console: Console) -> int:
    """Chat one to one; lines come from stdin when it is not a terminal.

    Returns 1 when the last answer failed on a model error (the error is shown), else 0.
    """
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.dm(employee, user)
        console.print(f"[bold]dm[/] {room.key}")
        _show_models(console, room)
        interactive = sys.stdin.isatty()
        failed = False
        while True:
            if interactive:
                try:
                    line = console.input(f"[bold green]{user}>[/] ")
                except EOFError:
                    break
            else:
                raw = sys.stdin.readline()
                if not raw:
                    break
                line = raw
            if line.strip() in ("/quit", "/exit"):
                break
            if line.strip():
                failed = await _post(console, room, user, line.strip())
        return 1 if failed else 0


async def close_session(settings: Settings, session: str, console: Console) -> int:
    """End ``session`` now and show what ending it did."""
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.session(session, scenario_file=True)
        events = await room.close()
        if not events:
            console.print(f"{room.key}: the session has already ended; nothing was said since")
            return 0
        for event in events:
            render_event(console, event, room.display_names)
        return 0


async def show_history(
    settings: Settings,
    session: str,
    last: int | None,
    raw: bool,
    console: Console,
    follow: bool = False,
) -> int:
    """Print a session's events; report unreadable lines (file and line) without losing them.

    ``follow``: then print each new event as any process appends it, until interrupted (the
    follower ``Room.subscribe`` and the server's streams use)."""
    key = SessionKey.parse(session)
    async with await Stores.open(settings=settings) as stores:
        store = stores.sessions
        if not store.log_path(key).exists():
            known = ", ".join(str(k) for k in store.list_sessions()) or "none yet"
            where = stores.folder.sessions_dir
            console.print(f"[red]no session {key} in {where}[/] (known: {known})")
            return 2
        log = store.log(key)
        events = log.tail(last) if last else log.read_all()
        for event in events:
            if raw:
                sys.stdout.write(event.to_json() + "\n")  # exact JSONL, unwrapped
            else:
                render_event(console, event)
        for problem in log.problems:
            console.print(f"[yellow]warning: {problem}[/]")
        if follow:
            newest = log.tail(1)
            async for event in follow_log(log.path, after=newest[0].id if newest else None):
                if raw:
                    sys.stdout.write(event.to_json() + "\n")
                    sys.stdout.flush()
                else:
                    render_event(console, event)
        return 0


async def replay_session(settings: Settings, session: str, console: Console) -> int:
    """Show a session again with the SOP version it ran on (not today's best)."""
    key = SessionKey.parse(session)
    async with await Stores.open(settings=settings) as stores:
        if not stores.sessions.log_path(key).exists():
            console.print(f"[red]no session {key} in {stores.folder.sessions_dir}[/]")
            return 2
        events = stores.sessions.log(key).read_all()
        refs = [sop for e in events if is_entry(e) and (sop := entry_meta(e).sop)]
        if refs:
            # Replay only reads (a read-only folder gets a read-only connection), and shows
            # the versions as stored: no card is imported.
            sops = (await stores.sops(import_cards=False)).store
            for text in dict.fromkeys(refs):
                ref = SopRef.parse(text, field="sop", require_version=True)
                version = await sops.get(ref.sop_id, ref.version)
                console.print(f"[bold]ran on {ref}[/] ({version.status})")
                console.print(escape(render_steps(str(ref), version.goal, version.steps)))
        for event in events:
            render_event(console, event)
        return 0
