"""SOPs' part in a room, registered like anyone's (the SopService is captured here).

- ``message``: save-as-SOP on a person's request, free remarks read as SOP corrections
  (:mod:`.run_remarks`), and feedback after a run closed (:func:`.run_feedback.late_feedback`);
- ``run_end``: understood remarks left unconfirmed are noted, then the run's outcome is
  stored against its version and the next version proposed (:func:`.run_feedback.close_run`);
- ``reply`` and ``session_end``: a draft nobody asked for when a reply reports the task done
  or a session ends (:func:`.auto_extract.propose`).
"""

from __future__ import annotations

from framework.extensions.context import HookContext
from framework.extensions.hooks import MessageRouted, ReplyLogged, RunEnded, SessionEnded
from framework.extensions.registry import Extensions
from framework.sop.auto_extract import Trigger, done_report, enabled, propose
from framework.sop.extraction import is_save_request
from framework.sop.run_feedback import close_run, late_feedback, save_as_sop
from framework.sop.run_remarks import open_at_end, read_remark
from framework.sop.service import SopService


def register(ext: Extensions, sops: SopService, *, auto_extract: bool) -> None:
    """Register the SOP hooks on ``ext``, bound to ``sops``.

    ``auto_extract``: ``Settings.sop_auto_extract`` (drafts nobody asked for; a scenario can
    also turn them off).
    """

    async def save_on_request(routed: MessageRouted, ctx: HookContext) -> None:
        """A person asked to keep this way of working: store an SOP draft from the session."""
        if is_save_request(routed.content):
            await save_as_sop(ctx, sops, routed.id)

    async def feedback_after_close(routed: MessageRouted, ctx: HookContext) -> None:
        """A person's corrections or score after an SOP run closed still count for that run."""
        await late_feedback(ctx, sops, routed)

    async def sop_feedback(ended: RunEnded, ctx: HookContext) -> None:
        """The run's outcome against its SOP version, and the next version it proposes."""
        if ended.state.get("phase") in ("sop", "wrapup"):
            await close_run(ctx, sops, ended.state, ended.reason)

    async def extract_when_done(reply: ReplyLogged, ctx: HookContext) -> None:
        """An employee reported the task done: propose a draft of the span."""
        if not (auto_extract and enabled(ctx)):
            return
        said = done_report(reply.text)  # cheap: the log is read only for a report
        if said is not None:
            done_id = f"autosop-{reply.id}"
            await propose(ctx, sops, done_id, Trigger.TASK_DONE, employee=reply.employee, said=said)

    async def extract_at_session_end(ended: SessionEnded, ctx: HookContext) -> None:
        """The session ended: propose a draft of its unextracted span."""
        if auto_extract and enabled(ctx):
            await propose(ctx, sops, f"autosop-{ended.id}", Trigger.SESSION_END, said=ended.reason)

    ext.hooks.on_message_routed(save_on_request, name="save_as_sop")
    ext.hooks.on_message_routed(read_remark, name="remarks")
    ext.hooks.on_message_routed(feedback_after_close, name="late_feedback")
    # Before sop_feedback: understood remarks left unconfirmed are noted before the outcome.
    ext.hooks.on_run_ended(open_at_end, name="remarks")
    ext.hooks.on_run_ended(sop_feedback, name="sop_feedback")
    ext.hooks.on_reply_logged(extract_when_done, name="auto_extraction")
    ext.hooks.on_session_ended(extract_at_session_end, name="auto_extraction")
