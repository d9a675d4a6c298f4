"""Rich rendering of transcripts: who speaks, under which SOP step, and a 'simulated' badge."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from framework.language import snippet
from framework.sessions.events import Event, EventKind

_WHY = {"sop_step": "SOP step", "mention": "@mention", "selector": "selector", "direct": "DM"}


SHOWN_CHARS = 2000
"""Characters of one message a transcript shows; the terminal's wrapping of a very long line
(Chinese has no spaces to break at) costs seconds per 10,000 characters."""


def _shown(event: Event) -> str:
    """The event's text for a transcript (escaped), cut with a pointer to the whole of it."""
    text = event.text
    if len(text) <= SHOWN_CHARS:
        return escape(text)
    more = len(text) - SHOWN_CHARS
    return escape(text[:SHOWN_CHARS]) + (
        f" [dim]… {more} more characters: staffroom history {escape(event.session)} --json[/]"
    )


def _badge(event: Event) -> str:
    model = event.meta.get("model")
    if model == "simulated":
        return " [black on yellow] simulated [/]"
    return f" [dim]{escape(str(model))}[/]" if model else ""


def render_event(console: Console, event: Event, names: dict[str, str] | None = None) -> None:
    """Print one event as a transcript line."""
    names = names or {}
    who = escape(names.get(event.author, event.author))
    kind = event.kind
    if kind == EventKind.PLAN and event.meta.get("entry"):
        if not (isinstance(event.content, dict) and event.content.get("announcement")):
            return  # a DM has no announcement to show
        body = (
            event.content.get("announcement", "") if isinstance(event.content, dict) else event.text
        )
        title = event.content.get("title", "") if isinstance(event.content, dict) else ""
        sop = event.meta.get("sop") or "no SOP"
        console.print(
            Panel(escape(body), title=f"{escape(title)} · {escape(sop)}", border_style="cyan")
        )
    elif kind == EventKind.PLAN and isinstance(event.content, dict) and "outcome" in event.content:
        _render_feedback(console, event.content)
    elif (
        kind == EventKind.PLAN and isinstance(event.content, dict) and "extracted" in event.content
    ):
        ref = event.content.get("extracted")
        if ref:
            steps = "; ".join(event.content.get("steps", []))
            console.print(
                f"[bold cyan]◆ SOP draft {escape(str(ref))} extracted:[/] {escape(steps)}"
            )
            console.print(f"  [dim]review: {escape(str(event.content.get('review')))}[/]")
        else:
            console.print(
                f"[yellow]◆ nothing to extract: {escape(str(event.content.get('why')))}[/]"
            )
    elif kind == EventKind.SOP_STEP:
        c = event.content
        speakers = ", ".join(c.get("speakers", []))
        console.print(
            f"[bold cyan]── step {c.get('n')}: {escape(str(c.get('do')))} ({escape(speakers)})[/]"
        )
    elif kind == EventKind.MESSAGE:
        if event.meta.get("human"):
            console.print(f"[bold green]{who}[/] [dim](human)[/]: {_shown(event)}")
        else:
            why = _WHY.get(str(event.meta.get("why")), str(event.meta.get("why", "")))
            step = event.meta.get("step")
            reason = f"{why} {step}" if step is not None else why
            note = f", {escape(str(event.meta['note']))}" if event.meta.get("note") else ""
            head = f"[bold magenta]{who}[/] [dim]({escape(reason)}{note})[/]{_badge(event)}"
            console.print(f"{head}: {_shown(event)}")
    elif kind == EventKind.TOOL_CALL:
        c = event.content
        args = ", ".join(f"{k}={snippet(str(v), 40)!r}" for k, v in (c.get("args") or {}).items())
        console.print(f"  [dim]{who} → {escape(str(c.get('name')))}({escape(args)})[/]")
    elif kind == EventKind.TOOL_RESULT:
        c = event.content
        mark = "ok" if c.get("ok") else "failed"
        console.print(
            f"  [dim]← {escape(str(c.get('name')))} {mark}: {escape(str(c.get('output')))[:160]}[/]"
        )
    elif kind == EventKind.ERROR:
        c = event.content if isinstance(event.content, dict) else {"detail": event.text}
        error, detail = escape(str(c.get("error", "error"))), escape(str(c.get("detail", "")))
        console.print(f"[bold red]! {who}: {error}[/] {detail}")
    elif kind == EventKind.FALLBACK:
        c = event.content if isinstance(event.content, dict) else {"reason": event.text}
        what, used = escape(str(c.get("what", "?"))), escape(str(c.get("used", "?")))
        console.print(f"[yellow]⚠ fallback: {what} → {used} ({escape(str(c.get('reason')))})[/]")
    elif kind == EventKind.WAIT:
        waiting = escape(", ".join(event.content.get("waiting_for", [])))
        reason = escape(str(event.content.get("reason")))
        console.print(f"[yellow]… waiting for {waiting} ({reason})[/]")
    elif kind == EventKind.OUTCOME:
        c = event.content
        console.print(
            f"[bold blue]■ ended: {escape(str(c.get('reason')))}[/] "
            f"(steps {c.get('steps_done')}/{c.get('steps_total')}, turns {c.get('turns')}, "
            f"sop {escape(str(c.get('sop')))})"
        )
    else:
        console.print(f"[dim]{kind} {who}: {_shown(event)}[/]")


def _render_feedback(console: Console, content: dict[str, object]) -> None:
    """The end-of-run outcome and, if any, the revision it proposed."""
    o = content["outcome"]
    if not isinstance(o, dict):
        return
    verdict = "success" if o.get("success") else "not a success"
    score = f", score {o['score']:.2f}" if isinstance(o.get("score"), float) else ""
    console.print(
        f"[bold blue]◆ outcome of {escape(str(o.get('sop')))}: {verdict}{score}[/] "
        f"(corrections {o.get('corrections')}, off-SOP turns {o.get('off_sop_turns')}, "
        f"human interventions {o.get('human_interventions')})"
    )
    # Outcomes recorded before failures existed have no such key.
    for failure in o.get("failures") or []:
        console.print(f"  [red]✗ {escape(str(failure))}[/]")
    revision = content.get("revision")
    if isinstance(revision, dict):
        console.print(
            f"[bold cyan]◆ proposed {escape(str(revision.get('sop')))} "
            f"({escape(str(revision.get('status')))}): {escape(str(revision.get('why')))}[/]"
        )
        for edit in revision.get("edits", []):
            console.print(f"  [dim]{escape(str(edit))}[/]")
