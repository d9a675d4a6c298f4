"""Rich rendering of transcripts: who speaks, under which SOP step, and a 'simulated' badge."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from framework.language import snippet
from framework.phrases import Language
from framework.sessions.entry import entry_meta, is_entry
from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import (
    EntryPayload,
    ErrorPayload,
    ExtractionPayload,
    FallbackPayload,
    FeedbackPayload,
    OutcomePayload,
    Payload,
    RemarkPayload,
    RevisionPayload,
    SessionEndPayload,
    StepPayload,
    ToolCallPayload,
    ToolResultPayload,
    WaitPayload,
    payload_of,
)
from framework.surfaces.cli.console import labels_language
from framework.surfaces.cli.event_labels import (
    ASKED_AGAIN,
    BESIDE_TRIAL,
    COUNT_SEPARATOR,
    COUNTS,
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
    lang = labels_language(console)
    names = names or {}
    who = escape(_name(names.get(event.author, event.author)))
    said = payload_of(event)
    # A hand-edited line holding text where an object belongs: the text is its reason.
    loose = None if isinstance(event.content, dict) else event.text
    if is_entry(event):
        if isinstance(said, EntryPayload) and said.announcement:  # a DM has none to show
            _render_entry(console, event, said, lang)
    elif _render_learning(console, event, said, lang):
        pass
    elif isinstance(said, SessionEndPayload):
        reason = escape(_name(said.reason if loose is None else loose))
        console.print(f"[dim]{SESSION_ENDED(lang, reason=reason, events=_n(said.events))}[/]")
    elif isinstance(said, StepPayload):
        do = _clip(said.do if loose is None else loose, event.session, language=lang)
        step_line = STEP(lang, n=_n(said.number), do=do, speakers=_names(said.speakers))
        console.print(f"[bold cyan]{step_line}[/]")
    elif event.kind == EventKind.MESSAGE:
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
    elif isinstance(said, ToolCallPayload):
        items = said.args.items()
        args = ", ".join(f"{_name(k)}={snippet(_name_cut(v, 400), 40)!r}" for k, v in items)
        console.print(f"  [dim]{who} → {escape(_name(said.name))}({escape(args)})[/]")
    elif isinstance(said, ToolResultPayload):
        mark = TOOL_OK(lang) if said.ok else TOOL_FAILED(lang)
        output = _clip(said.output, event.session, 160, language=lang)
        console.print(f"  [dim]← {escape(_name(said.name))} {mark}: {output}[/]")
    elif isinstance(said, ErrorPayload):
        error = escape(_name("error" if said.error is None else said.error))
        detail = _clip(loose or said.detail or "", event.session, language=lang)
        console.print(f"[bold red]! {who}: {error}[/] {detail}")
    elif isinstance(said, FallbackPayload):
        what, used = (escape(_name("?" if v is None else v)) for v in (said.what, said.used))
        reason = _clip(said.reason if loose is None else loose, event.session, language=lang)
        console.print(f"[yellow]{FALLBACK(lang, what=what, used=used, reason=reason)}[/]")
    elif isinstance(said, WaitPayload):
        reason = escape(_name(said.reason if loose is None else loose))
        console.print(f"[yellow]{WAITING(lang, who=_names(said.waiting_for), reason=reason)}[/]")
    elif isinstance(said, OutcomePayload):
        counts = ENDED_COUNTS(
            lang,
            done=_n(said.steps_done),
            total=_n(said.steps_total),
            turns=_n(said.turns),
            sop=escape(_name(said.sop)),
        )
        reason = escape(_name(said.reason if loose is None else loose))
        console.print(f"[bold blue]{ENDED(lang, reason=reason)}[/] {counts}")
    else:
        console.print(f"[dim]{escape(_name(event.kind))} {who}: {_shown(event, lang)}[/]")


def _n(value: object) -> str:
    """A count or a step number: short by nature, cut if a hand edit made it long."""
    return escape(_name(value))


def _names(items: list[str]) -> str:
    """A list of names (speakers, people waited for), joined, escaped and cut."""
    return escape(_name(", ".join(items[:20])))


def _name_cut(value: object, limit: int) -> str:
    """``str(value)`` cut at ``limit`` before anything else walks it (snippet() splits)."""
    text = value if isinstance(value, str) else str(value)
    return text[:limit]


def _sop_label(event: Event, entered: EntryPayload, language: Language) -> str:
    """The version the room runs and whether it is on trial (entry meta ``sop_trial``)."""
    run = entry_meta(event)
    sop = run.sop
    if not sop:
        return NO_SOP(language)
    trial = next(((on, best) for on, best in entered.trials if sop in (on, best)), None)
    if trial is None:
        return sop
    on, best = ("?" if ref is None else ref for ref in trial)
    if run.on_trial:
        return ON_TRIAL(language, sop=sop, best=best)
    return BESIDE_TRIAL(language, sop=sop, trial=on) if best == sop else sop


def _render_entry(console: Console, event: Event, entered: EntryPayload, lang: Language) -> None:
    """The announcement panel a room opens with, titled with the SOP version it runs.

    A title is never cut by the border: when the room's title and its version do not fit
    on it together, the version is the panel's first line (wrapped there, whole)."""
    label, title = _name(_sop_label(event, entered, lang)), _name(entered.title or "")
    text = _clip(entered.announcement or "", event.session, language=lang)
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


def _render_extracted(
    console: Console, drafted: ExtractionPayload, session: str, lang: Language
) -> None:
    """An SOP draft extracted from a free-form room, or why there was none."""
    if not drafted.extracted:
        why = _clip(drafted.why, session, language=lang)
        console.print(f"[yellow]{NOTHING_EXTRACTED(lang, why=why)}[/]")
        return
    head = EXTRACTED(lang, ref=escape(_name(drafted.extracted)))
    console.print(f"[bold cyan]{head}[/] {_clip('; '.join(drafted.steps), session, language=lang)}")
    how = _clip(drafted.review, session, language=lang)
    console.print(f"  [dim]{REVIEW(lang, how=how)}[/]")
    if drafted.why:  # proposed unasked: say what triggered it
        console.print(f"  [dim]{WHY(lang, why=_clip(drafted.why, session, language=lang))}[/]")


def _render_learning(console: Console, event: Event, said: Payload, lang: Language) -> bool:
    """A run's feedback, a revision, an extraction or a remark (True when ``said`` was one)."""
    session = event.session
    if isinstance(said, FeedbackPayload):
        _render_outcome(console, said, session, lang)
    elif isinstance(said, RevisionPayload):
        _render_revision(console, said, session, lang)
    elif isinstance(said, EntryPayload) and said.outcome is not None:  # logs before feedback
        _render_outcome(console, said.outcome, session, lang)
        if said.revision is not None:
            _render_revision(console, said.revision, session, lang)
    elif isinstance(said, ExtractionPayload):
        _render_extracted(console, said, session, lang)
    elif isinstance(said, EntryPayload) and said.extraction is not None:  # the same, older
        _render_extracted(console, said.extraction, session, lang)
    elif isinstance(said, RemarkPayload):
        _render_remark(console, said, session)
    else:
        return False
    return True


def _render_remark(console: Console, remark: RemarkPayload, session: str) -> None:
    """A free remark as the room read it ("理解为：…"), confirmed or dropped, and how to answer."""
    status = remark.status
    style = "bold cyan" if status in ("understood", "confirmed") else "dim"
    who = f"{escape(_name(remark.by))}: " if remark.by and status == "understood" else ""
    console.print(f"[{style}]◇ {who}{_clip(remark.text or '', session)}[/]")
    if remark.ask:
        console.print(f"  [dim]{_clip(remark.ask, session)}[/]")


def _render_outcome(console: Console, o: FeedbackPayload, session: str, lang: Language) -> None:
    """A run's measured outcome against its SOP version (or why late feedback did not count)."""
    if not o.counted:
        console.print(f"[yellow]◆ {_clip(o.notice or '', session, language=lang)}[/]")
        return
    # Only what the event holds: late feedback has no turn counts, and its score may be
    # unknown (a correction without one); nothing is shown as "None".
    result = [] if o.success is None else [SUCCESS(lang) if o.success else NOT_SUCCESS(lang)]
    result += [] if o.score is None else [SCORE(lang, score=f"{o.score:.2f}")]
    head = (LATE_OUTCOME if o.late else OUTCOME)(
        lang, sop=escape(_name(o.sop)), result=COUNT_SEPARATOR(lang).join(result)
    )
    held = zip(COUNTS, (o.corrections, o.off_sop_turns, o.human_interventions), strict=True)
    counts = [label(lang, n=_n(n)) for label, n in held if n is not None]
    shown = OUTCOME_COUNTS(lang, counts=COUNT_SEPARATOR(lang).join(counts)) if counts else ""
    console.print(f"[bold blue]{head}[/]{shown}")
    for failure in o.failures[:SHOWN_ITEMS]:  # none in outcomes from before failures
        console.print(f"  [red]✗ {_clip(failure, session, language=lang)}[/]")


def _render_revision(
    console: Console, revision: RevisionPayload, session: str, lang: Language
) -> None:
    """The SOP version a run proposed (or published), with its edits."""
    ref, status = escape(_name(revision.sop)), escape(_name(revision.status))
    if revision.reselected:
        console.print(f"[bold cyan]{ASKED_AGAIN(lang, ref=ref, status=status)}[/]")
    elif revision.edits is not None:
        why = _clip(revision.why, session, language=lang)
        console.print(f"[bold cyan]{PROPOSED(lang, ref=ref, status=status, why=why)}[/]")
    for edit in (revision.edits or [])[:SHOWN_ITEMS]:
        console.print(f"  [dim]{_clip(edit, session)}[/]")
    for line in revision.conflicts[:SHOWN_ITEMS]:
        console.print(f"  [yellow]{_clip(line, session)}[/]")
    for line in revision.notes[:SHOWN_ITEMS]:  # what became of the open draft it replaced
        console.print(f"  [cyan]{_clip(line, session)}[/]")
