"""Rich rendering of transcripts: who speaks, under which SOP step, and a 'simulated' badge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from framework.language import snippet
from framework.phrases import Language
from framework.surfaces.cli.event_labels import (
    ASKED_AGAIN,
    BESIDE_TRIAL,
    COUNT_LABELS,
    COUNT_SEPARATOR,
    ENDED,
    ENDED_COUNTS,
    EXTRACTED,
    FALLBACK,
    HUMAN,
    LATE_OUTCOME,
    MORE,
    NO_SOP,
    NOT_SUCCESS,
    NOTHING_EXTRACTED,
    ON_TRIAL,
    OUTCOME,
    OUTCOME_COUNTS,
    PROPOSED,
    REVIEW,
    SCORE,
    SESSION_ENDED,
    STEP,
    SUCCESS,
    TOOL_FAILED,
    TOOL_OK,
    WAITING,
    WHY,
    WHY_LABELS,
)

if TYPE_CHECKING:  # the sessions package loads when a transcript is shown, not for --help
    from framework.sessions.events import Event


class LabelConsole(Console):
    """A rich console that knows the language of the labels it prints (the CLI sets it from
    ``$STAFFROOM_LANGUAGE`` or the project's ``staffroom.yaml`` once the settings are read)."""

    def __init__(self, *args: Any, language: Language = "en", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.language: Language = language


def labels_language(console: Console) -> Language:
    """The language ``console`` labels things in (English for a plain console)."""
    return console.language if isinstance(console, LabelConsole) else "en"


SHOWN_CHARS = 2000
"""Characters of one message a transcript shows; the terminal's wrapping of a very long line
(Chinese has no spaces to break at) costs seconds per 10,000 characters."""


SHOWN_ITEMS = 50
"""Items of one list (failures, edits) a transcript shows."""

NAME_CHARS = 80
"""Characters of a name (author, step, reason) a transcript shows; names are short unless a
log was edited by hand."""


def _shown(event: Event, language: Language = "en") -> str:
    """The event's text for a transcript (escaped), cut with a pointer to the whole of it."""
    return _clip(event.text, event.session, language=language)


def _clip(
    value: object, session: str, limit: int = SHOWN_CHARS, *, language: Language = "en"
) -> str:
    """``value`` as escaped markup, cut at ``limit`` characters with a pointer to the whole.

    Cut before escaping: a cut through an escaped ``\\[`` would leave a backslash that
    escapes the markup after it.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return escape(_visible(text))
    command = f"staffroom history {escape(_name(session))} --json"
    more = MORE(language, more=len(text) - limit, command=command)
    return escape(_visible(text[:limit])) + f" [dim]{more}[/]"


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
    """Print one event as a transcript line, labelled in the console's language
    (:func:`labels_language`).

    Every text is cut (see :data:`SHOWN_CHARS`) and escaped, and content of an unexpected
    shape (a hand-edited log) is shown as text instead of failing.
    """
    from framework.sessions.entry import is_entry
    from framework.sessions.events import EventKind

    lang = labels_language(console)
    names = names or {}
    who = escape(_name(names.get(event.author, event.author)))
    c = _fields(event)
    kind = event.kind
    if is_entry(event):
        if c.get("announcement"):  # a DM has no announcement to show
            _render_entry(console, event, c, lang)
    elif _render_learning(console, event, c, lang):
        pass
    elif kind == EventKind.SESSION_END:
        ended = SESSION_ENDED(
            lang, reason=escape(_name(c.get("reason"))), events=_n(c.get("events"))
        )
        console.print(f"[dim]{ended}[/]")
    elif kind == EventKind.SOP_STEP:
        do = _clip(c.get("do"), event.session, language=lang)
        step_line = STEP(lang, n=_n(c.get("n")), do=do, speakers=_names(c.get("speakers")))
        console.print(f"[bold cyan]{step_line}[/]")
    elif kind == EventKind.MESSAGE:
        if event.from_person:
            console.print(f"[bold green]{who}[/] [dim]{HUMAN(lang)}[/]: {_shown(event, lang)}")
        else:
            label = WHY_LABELS.get(str(event.meta.get("why")))
            why = label(lang) if label else str(event.meta.get("why", ""))
            step = event.meta.get("step")
            reason = f"{why} {step}" if step is not None else why
            note = event.meta.get("note")
            note = f", {_clip(note, event.session, language=lang)}" if note else ""
            head = f"[bold magenta]{who}[/] [dim]({escape(_name(reason))}{note})[/]{_badge(event)}"
            console.print(f"{head}: {_shown(event, lang)}")
    elif kind == EventKind.TOOL_CALL:
        raw_args = c.get("args")
        items = raw_args.items() if isinstance(raw_args, dict) else []
        args = ", ".join(f"{_name(k)}={snippet(_name_cut(v, 400), 40)!r}" for k, v in items)
        console.print(f"  [dim]{who} → {escape(_name(c.get('name')))}({escape(args)})[/]")
    elif kind == EventKind.TOOL_RESULT:
        mark = TOOL_OK(lang) if c.get("ok") else TOOL_FAILED(lang)
        output = _clip(c.get("output"), event.session, 160, language=lang)
        console.print(f"  [dim]← {escape(_name(c.get('name')))} {mark}: {output}[/]")
    elif kind == EventKind.ERROR:
        error = escape(_name(c.get("error", "error")))
        detail = _clip(c.get("detail", ""), event.session, language=lang)
        console.print(f"[bold red]! {who}: {error}[/] {detail}")
    elif kind == EventKind.FALLBACK:
        what, used = escape(_name(c.get("what", "?"))), escape(_name(c.get("used", "?")))
        reason = _clip(c.get("reason"), event.session, language=lang)
        console.print(f"[yellow]{FALLBACK(lang, what=what, used=used, reason=reason)}[/]")
    elif kind == EventKind.WAIT:
        waiting, reason = _names(c.get("waiting_for")), escape(_name(c.get("reason")))
        console.print(f"[yellow]{WAITING(lang, who=waiting, reason=reason)}[/]")
    elif kind == EventKind.OUTCOME:
        counts = ENDED_COUNTS(
            lang,
            done=_n(c.get("steps_done")),
            total=_n(c.get("steps_total")),
            turns=_n(c.get("turns")),
            sop=escape(_name(c.get("sop"))),
        )
        console.print(
            f"[bold blue]{ENDED(lang, reason=escape(_name(c.get('reason'))))}[/] {counts}"
        )
    else:
        console.print(f"[dim]{escape(_name(kind))} {who}: {_shown(event, lang)}[/]")


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


def _sop_label(event: Event, c: dict[str, Any], language: Language) -> str:
    """The version the room runs and whether it is on trial (entry meta ``sop_trial``)."""
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


def _render_entry(console: Console, event: Event, c: dict[str, Any], lang: Language) -> None:
    """The announcement panel a room opens with, titled with the SOP version it runs.

    A title is never cut by the border: when the room's title and its version do not fit
    on it together, the version is the panel's first line (wrapped there, whole)."""
    label, title = _name(_sop_label(event, c, lang)), _name(c.get("title", ""))
    text = _clip(c.get("announcement", ""), event.session, language=lang)
    room = console.width - 6  # rich keeps a title whole up to the width less corners and gaps
    if cell_len(f"{title} · {label}") <= room:
        title = f"{title} · {label}"
    else:
        text = f"[bold]{escape(label)}[/]\n{text}"
        title = title if cell_len(title) <= room else set_cell_size(title, room - 1) + "…"
    console.print(
        Panel(text, title=escape(title), border_style="cyan"),
        soft_wrap=False,  # a panel has a width: its lines wrap inside it instead of being cut
    )


def _render_extracted(console: Console, c: dict[str, Any], session: str, lang: Language) -> None:
    """An SOP draft extracted from a free-form room, or why there was none."""
    ref = c.get("extracted")
    if not ref:
        why = _clip(c.get("why"), session, language=lang)
        console.print(f"[yellow]{NOTHING_EXTRACTED(lang, why=why)}[/]")
        return
    steps = c.get("steps")
    listed = "; ".join(str(s) for s in steps) if isinstance(steps, list) else str(steps)
    head = EXTRACTED(lang, ref=escape(_name(ref)))
    console.print(f"[bold cyan]{head}[/] {_clip(listed, session, language=lang)}")
    how = _clip(c.get("review"), session, language=lang)
    console.print(f"  [dim]{REVIEW(lang, how=how)}[/]")
    if c.get("why"):  # proposed unasked: say what triggered it
        console.print(f"  [dim]{WHY(lang, why=_clip(c.get('why'), session, language=lang))}[/]")


def _render_learning(console: Console, event: Event, c: dict[str, Any], lang: Language) -> bool:
    """A run's feedback, a revision or an extraction (True when ``event`` was one)."""
    from framework.sessions.events import EventKind

    kind, session = event.kind, event.session
    if kind == EventKind.FEEDBACK:
        _render_outcome(console, c, session, lang)
    elif kind == EventKind.REVISION:
        _render_revision(console, c, session, lang)
    elif kind == EventKind.PLAN and "outcome" in c:  # logs from before the feedback kind
        _render_outcome(console, c["outcome"], session, lang)
        _render_revision(console, c.get("revision"), session, lang)
    elif kind == EventKind.EXTRACTION or (kind == EventKind.PLAN and "extracted" in c):
        _render_extracted(console, c, session, lang)
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


def _render_outcome(console: Console, o: Any, session: str, lang: Language) -> None:
    """A run's measured outcome against its SOP version (or why late feedback did not count)."""
    if not isinstance(o, dict):
        return
    if o.get("counted") is False:
        console.print(f"[yellow]◆ {_clip(o.get('notice', ''), session, language=lang)}[/]")
        return
    # Only what the event holds: late feedback has no turn counts, and its score may be
    # unknown (a correction without one); nothing is shown as "None".
    success, score = o.get("success"), o.get("score")
    result = [SUCCESS(lang) if success else NOT_SUCCESS(lang)] if _known(success, bool) else []
    result += [SCORE(lang, score=f"{score:.2f}")] if _known(score, float) else []
    head = (LATE_OUTCOME if o.get("late") else OUTCOME)(
        lang, sop=escape(_name(o.get("sop"))), result=COUNT_SEPARATOR(lang).join(result)
    )
    counts = [
        label(lang, n=_n(o[key])) for key, label in COUNT_LABELS.items() if _known(o.get(key), int)
    ]
    shown = OUTCOME_COUNTS(lang, counts=COUNT_SEPARATOR(lang).join(counts)) if counts else ""
    console.print(f"[bold blue]{head}[/]{shown}")
    # Outcomes recorded before failures existed have no such key.
    failures = o.get("failures")
    for failure in failures[:SHOWN_ITEMS] if isinstance(failures, list) else []:
        console.print(f"  [red]✗ {_clip(failure, session, language=lang)}[/]")


def _known(value: object, kind: type) -> bool:
    """Whether ``value`` is a ``kind`` (``float`` takes an int too; a bool is neither)."""
    kinds = (int, float) if kind is float else (kind,)
    return isinstance(value, kinds) and (kind is bool or not isinstance(value, bool))


def _render_revision(console: Console, revision: Any, session: str, lang: Language) -> None:
    """The SOP version a run proposed (or published), with its edits."""
    if isinstance(revision, dict):
        ref, status = escape(_name(revision.get("sop"))), escape(_name(revision.get("status")))
        if revision.get("reselected"):
            console.print(f"[bold cyan]{ASKED_AGAIN(lang, ref=ref, status=status)}[/]")
        elif "edits" in revision:
            why = _clip(revision.get("why"), session, language=lang)
            console.print(f"[bold cyan]{PROPOSED(lang, ref=ref, status=status, why=why)}[/]")
        edits = revision.get("edits")
        for edit in edits[:SHOWN_ITEMS] if isinstance(edits, list) else []:
            console.print(f"  [dim]{_clip(edit, session)}[/]")
        conflicts = revision.get("conflicts")
        for line in conflicts[:SHOWN_ITEMS] if isinstance(conflicts, list) else []:
            console.print(f"  [yellow]{_clip(line, session)}[/]")
        notes = revision.get("notes")  # what became of the open draft it replaced
        for line in notes[:SHOWN_ITEMS] if isinstance(notes, list) else []:
            console.print(f"  [cyan]{_clip(line, session)}[/]")
