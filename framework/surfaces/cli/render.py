"""Rich rendering of transcripts: who speaks, under which SOP step, and a 'simulated' badge."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from framework.language import language_of, snippet
from framework.phrases import Phrase
from framework.sessions.events import Event, EventKind

_WHY = {"sop_step": "SOP step", "mention": "@mention", "selector": "selector", "direct": "DM"}


SHOWN_CHARS = 2000
"""Characters of one message a transcript shows; the terminal's wrapping of a very long line
(Chinese has no spaces to break at) costs seconds per 10,000 characters."""


SHOWN_ITEMS = 50
"""Items of one list (failures, edits) a transcript shows."""

NAME_CHARS = 80
"""Characters of a name (author, step, reason) a transcript shows; names are short unless a
log was edited by hand."""


def _shown(event: Event) -> str:
    """The event's text for a transcript (escaped), cut with a pointer to the whole of it."""
    return _clip(event.text, event.session)


def _clip(value: object, session: str, limit: int = SHOWN_CHARS) -> str:
    """``value`` as escaped markup, cut at ``limit`` characters with a pointer to the whole.

    Cut before escaping: a cut through an escaped ``\\[`` would leave a backslash that
    escapes the markup after it.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return escape(_visible(text))
    more = len(text) - limit
    return escape(_visible(text[:limit])) + (
        f" [dim]… {more} more characters: staffroom history {escape(_name(session))} --json[/]"
    )


def _name(value: object) -> str:
    """A short field (a name, a reason, a ref): cut plainly, no pointer (not escaped)."""
    text = value if isinstance(value, str) else str(value)
    return _visible(text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…")


# C0 and C1 control characters but tab and newline: rich passes ESC through, so a log line
# holding "\x1b[2J" would clear the reader's terminal. They are shown as \xNN instead.
_CONTROLS = {
    code: f"\\x{code:02x}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if code not in (9, 10)
}


def _visible(text: str) -> str:
    """``text`` with control characters written out (``\\x1b``), so none reaches the terminal."""
    return text.translate(_CONTROLS)


def _badge(event: Event) -> str:
    model = event.meta.get("model")
    if model == "simulated":
        return " [black on yellow] simulated [/]"
    return f" [dim]{escape(_name(model))}[/]" if model else ""


def render_event(console: Console, event: Event, names: dict[str, str] | None = None) -> None:
    """Print one event as a transcript line.

    Every text is cut (see :data:`SHOWN_CHARS`) and escaped, and content of an unexpected
    shape (a hand-edited log) is shown as text instead of failing.
    """
    names = names or {}
    who = escape(_name(names.get(event.author, event.author)))
    c = _fields(event)
    kind = event.kind
    if kind == EventKind.PLAN and event.meta.get("entry"):
        if c.get("announcement"):  # a DM has no announcement to show
            _render_entry(console, event, c)
    elif _render_learning(console, event, c):
        pass
    elif kind == EventKind.SESSION_END:
        console.print(
            f"[dim]── session ended ({escape(_name(c.get('reason')))}, "
            f"{_n(c.get('events'))} events); the next message starts a new one ──[/]"
        )
    elif kind == EventKind.SOP_STEP:
        console.print(
            f"[bold cyan]── step {_n(c.get('n'))}: {_clip(c.get('do'), event.session)} "
            f"({_names(c.get('speakers'))})[/]"
        )
    elif kind == EventKind.MESSAGE:
        if event.meta.get("human"):
            console.print(f"[bold green]{who}[/] [dim](human)[/]: {_shown(event)}")
        else:
            why = _WHY.get(str(event.meta.get("why")), str(event.meta.get("why", "")))
            step = event.meta.get("step")
            reason = f"{why} {step}" if step is not None else why
            note = f", {_clip(event.meta['note'], event.session)}" if event.meta.get("note") else ""
            head = f"[bold magenta]{who}[/] [dim]({escape(_name(reason))}{note})[/]{_badge(event)}"
            console.print(f"{head}: {_shown(event)}")
    elif kind == EventKind.TOOL_CALL:
        raw_args = c.get("args")
        items = raw_args.items() if isinstance(raw_args, dict) else []
        args = ", ".join(f"{_name(k)}={snippet(_name_cut(v, 400), 40)!r}" for k, v in items)
        console.print(f"  [dim]{who} → {escape(_name(c.get('name')))}({escape(args)})[/]")
    elif kind == EventKind.TOOL_RESULT:
        mark = "ok" if c.get("ok") else "failed"
        output = _clip(c.get("output"), event.session, 160)
        console.print(f"  [dim]← {escape(_name(c.get('name')))} {mark}: {output}[/]")
    elif kind == EventKind.ERROR:
        error = escape(_name(c.get("error", "error")))
        console.print(f"[bold red]! {who}: {error}[/] {_clip(c.get('detail', ''), event.session)}")
    elif kind == EventKind.FALLBACK:
        what, used = escape(_name(c.get("what", "?"))), escape(_name(c.get("used", "?")))
        reason = _clip(c.get("reason"), event.session)
        console.print(f"[yellow]⚠ fallback: {what} → {used} ({reason})[/]")
    elif kind == EventKind.WAIT:
        waiting, reason = _names(c.get("waiting_for")), escape(_name(c.get("reason")))
        console.print(f"[yellow]… waiting for {waiting} ({reason})[/]")
    elif kind == EventKind.OUTCOME:
        console.print(
            f"[bold blue]■ ended: {escape(_name(c.get('reason')))}[/] "
            f"(steps {_n(c.get('steps_done'))}/{_n(c.get('steps_total'))}, "
            f"turns {_n(c.get('turns'))}, sop {escape(_name(c.get('sop')))})"
        )
    else:
        console.print(f"[dim]{escape(_name(kind))} {who}: {_shown(event)}[/]")


def _fields(event: Event) -> dict[str, Any]:
    """The event's content as a dict (text content becomes its ``detail``/``reason``)."""
    if isinstance(event.content, dict):
        return event.content
    return {"detail": event.text, "reason": event.text, "do": event.text}


def _n(value: object) -> str:
    """A count or a step number: short by nature, cut if a hand edit made it long."""
    return escape(_name(value))


def _names(value: object) -> str:
    """A list of names (speakers, people waited for), joined, escaped and cut."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    return escape(_name(", ".join(str(item) for item in items[:20])))


def _name_cut(value: object, limit: int) -> str:
    """``str(value)`` cut at ``limit`` before anything else walks it (snippet() splits)."""
    text = value if isinstance(value, str) else str(value)
    return text[:limit]


ON_TRIAL = Phrase(en="{sop} (on trial beside {best})", zh="{sop}（试用中，对照 {best}）")
BESIDE_TRIAL = Phrase(
    en="{sop} (the best; {trial} on trial elsewhere)", zh="{sop}（最佳；{trial} 另在试用）"
)
NO_SOP = Phrase(en="no SOP", zh="无 SOP")


def _sop_label(event: Event, c: dict[str, Any]) -> str:
    """The version the room runs and whether it is on trial (entry meta ``sop_trial``)."""
    text = str(c.get("announcement") or "")
    language = language_of(text) if text.strip() else "en"  # the room's language
    sop = event.meta.get("sop")
    if not sop:
        return NO_SOP(language)
    trials = c.get("sop_trials")
    records = trials.values() if isinstance(trials, dict) else []
    trial = next(
        (t for t in records if isinstance(t, dict) and sop in (t.get("trial"), t.get("best"))),
        None,
    )
    if event.meta.get("sop_trial") and trial is not None:
        return ON_TRIAL(language, sop=sop, best=trial.get("best", "?"))
    if trial is not None and trial.get("best") == sop:
        return BESIDE_TRIAL(language, sop=sop, trial=trial.get("trial", "?"))
    return str(sop)


def _render_entry(console: Console, event: Event, c: dict[str, Any]) -> None:
    """The announcement panel a room opens with, titled with the SOP version it runs."""
    title = f"{escape(_name(c.get('title', '')))} · {escape(_name(_sop_label(event, c)))}"
    console.print(
        Panel(_clip(c.get("announcement", ""), event.session), title=title, border_style="cyan"),
        soft_wrap=False,  # a panel has a width: its lines wrap inside it instead of being cut
    )


def _render_extracted(console: Console, c: dict[str, Any], session: str) -> None:
    """An SOP draft extracted from a free-form room, or why there was none."""
    ref = c.get("extracted")
    if not ref:
        console.print(f"[yellow]◆ nothing to extract: {_clip(c.get('why'), session)}[/]")
        return
    steps = c.get("steps")
    listed = "; ".join(str(s) for s in steps) if isinstance(steps, list) else str(steps)
    console.print(
        f"[bold cyan]◆ SOP draft {escape(_name(ref))} extracted:[/] {_clip(listed, session)}"
    )
    console.print(f"  [dim]review: {_clip(c.get('review'), session)}[/]")
    if c.get("why"):  # proposed unasked: say what triggered it
        console.print(f"  [dim]why: {_clip(c.get('why'), session)}[/]")


def _render_learning(console: Console, event: Event, c: dict[str, Any]) -> bool:
    """A run's feedback, a revision or an extraction (True when ``event`` was one)."""
    kind, session = event.kind, event.session
    if kind == EventKind.FEEDBACK:
        _render_outcome(console, c, session)
    elif kind == EventKind.REVISION:
        _render_revision(console, c, session)
    elif kind == EventKind.PLAN and "outcome" in c:  # logs from before the feedback kind
        _render_outcome(console, c["outcome"], session)
        _render_revision(console, c.get("revision"), session)
    elif kind == EventKind.EXTRACTION or (kind == EventKind.PLAN and "extracted" in c):
        _render_extracted(console, c, session)
    elif kind == EventKind.REMARK:
        _render_remark(console, c, session)
    else:
        return False
    return True


def _render_remark(console: Console, c: dict[str, Any], session: str) -> None:
    """A free remark as the room read it ("理解为：…"), confirmed or dropped, and how to answer."""
    status = c.get("status")
    style = "bold cyan" if status in ("understood", "confirmed") else "dim"
    who = f"{escape(_name(c['by']))}: " if c.get("by") and status == "understood" else ""
    console.print(f"[{style}]◇ {who}{_clip(c.get('text', ''), session)}[/]")
    if c.get("ask"):
        console.print(f"  [dim]{_clip(c['ask'], session)}[/]")


def _render_outcome(console: Console, o: Any, session: str) -> None:
    """A run's measured outcome against its SOP version (or why late feedback did not count)."""
    if not isinstance(o, dict):
        return
    if o.get("counted") is False:
        console.print(f"[yellow]◆ {_clip(o.get('notice', ''), session)}[/]")
        return
    verdict = "success" if o.get("success") else "not a success"
    score = f", score {o['score']:.2f}" if isinstance(o.get("score"), float) else ""
    console.print(
        f"[bold blue]◆ outcome of {escape(_name(o.get('sop')))}: {verdict}{score}[/] "
        f"(corrections {_n(o.get('corrections'))}, off-SOP turns {_n(o.get('off_sop_turns'))}, "
        f"human interventions {_n(o.get('human_interventions'))})"
    )
    # Outcomes recorded before failures existed have no such key.
    failures = o.get("failures")
    for failure in failures[:SHOWN_ITEMS] if isinstance(failures, list) else []:
        console.print(f"  [red]✗ {_clip(failure, session)}[/]")


def _render_revision(console: Console, revision: Any, session: str) -> None:
    """The SOP version a run proposed (or published), with its edits."""
    if isinstance(revision, dict):
        ref, status = escape(_name(revision.get("sop"))), escape(_name(revision.get("status")))
        if revision.get("reselected"):
            console.print(f"[bold cyan]◆ the runs ask for {ref} again ({status})[/]")
        elif "edits" in revision:
            why = _clip(revision.get("why"), session)
            console.print(f"[bold cyan]◆ proposed {ref} ({status}): {why}[/]")
        edits = revision.get("edits")
        for edit in edits[:SHOWN_ITEMS] if isinstance(edits, list) else []:
            console.print(f"  [dim]{_clip(edit, session)}[/]")
        conflicts = revision.get("conflicts")
        for line in conflicts[:SHOWN_ITEMS] if isinstance(conflicts, list) else []:
            console.print(f"  [yellow]{_clip(line, session)}[/]")
        notes = revision.get("notes")  # what became of the open draft it replaced
        for line in notes[:SHOWN_ITEMS] if isinstance(notes, list) else []:
            console.print(f"  [cyan]{_clip(line, session)}[/]")
