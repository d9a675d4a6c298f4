"""The offline simulator: a deterministic test double behind the same factory as real models.

It is not intelligent and never pretends to be: every reply starts with ``[simulated]`` and
every event it produces carries ``meta.model = "simulated"``. Given the same brief and the
same recent messages it always answers the same way, which is what tests and the offline
demo need. It answers in the role's voice from the SOP step (read from the structured
:mod:`~framework.models.brief`, never by sniffing prompt wording), writes the step's output
to the workspace when the step lists ``write_file`` or declares products (exactly the
declared files, when there are any), and picks a speaker when asked to act as a selector.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult

from framework.language import snippet
from framework.models.brief import TurnBrief, find_brief
from framework.models.offline import OfflineChatModel
from framework.models.quiet import NOTHING_TO_REPORT
from framework.phrases import Phrase
from framework.specs.step import StepState
from framework.statements import LANGUAGE_KEY, stated_facts

_FILE_NAME = re.compile(r"[\w.-]+\.(?:md|txt|json|csv|yaml)")

# Openings in each role's voice. Roles not listed speak in the generic voice.
_VOICES = {
    "pm": Phrase(en="From the product side", zh="从产品角度"),
    "engineer": Phrase(en="From the engineering side", zh="从技术角度"),
    "designer": Phrase(en="From the design side", zh="从设计角度"),
    "reviewer": Phrase(en="From the review side", zh="从审阅角度"),
}
GENERIC_VOICE = Phrase(
    en="As I see it",
    zh="我的看法",
)
STEP_TASK = Phrase(
    en="step {n} '{do}'",
    zh="第 {n} 步「{do}」",
)
MESSAGE_TASK = Phrase(
    en="your message",
    zh="你的消息",
)
SPEAKS = Phrase(
    en="[simulated] {name}: {voice}, working on {task}.",
    zh="[simulated] {name}：{voice}，处理{task}。",
)
HEARD = Phrase(
    en=' I read: "{heard}".',
    zh="收到：「{heard}」。",
)
PROPOSAL = Phrase(
    en=" Proposal: keep the scope small, confirm the goal, then move on.",
    zh="建议：先对齐目标，控制范围，再推进下一步。",
)
WRITING_OUTPUT = Phrase(
    en="[simulated] Writing the output of this step to the workspace.",
    zh="[simulated] 先把这一步的产出写进工作区。",
)
NOT_NOTED = Phrase(
    en="[simulated] {name}: the memory was not written ({saved}).",
    zh="[simulated] {name}：记忆没有写入（{saved}）。",
)
NOTED = Phrase(
    en="[simulated] {name}: noted, I will remember that ({saved}).",
    zh="[simulated] {name}：好的，我记下了（{saved}）。",
)
TOOL_DONE = Phrase(
    en="{name}: done with '{task}'. Tool said: {outcome}",
    zh="{name}：「{task}」已完成。工具返回：{outcome}",
)


def _last_human(messages: Sequence[BaseMessage], humans: Sequence[str] = ()) -> str:
    """The newest message from a person (any author if ``humans`` is empty), unprefixed."""
    for message in reversed(messages):
        if not (isinstance(message, HumanMessage) and isinstance(message.content, str)):
            continue
        author = message.additional_kwargs.get("staffroom_author")
        if humans and author not in humans:
            continue
        prefix = f"{author}: "
        if author and message.content.startswith(prefix):
            return message.content[len(prefix) :]
        return message.content
    return ""


def _called(messages: Sequence[BaseMessage]) -> str | None:
    """Name of the tool the simulator called in its previous message, if any."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message.tool_calls[0]["name"] if message.tool_calls else None
    return None


def _tool_names(tools: object) -> list[str]:
    names: list[str] = []
    if isinstance(tools, list):
        for tool in tools:
            if isinstance(tool, dict):
                names.append(str(tool.get("function", {}).get("name", "")))
    return names


class SimulatedChatModel(OfflineChatModel):
    """Deterministic offline stand-in for a chat model (labelled ``simulated``)."""

    delay: float = 0.0
    """Seconds to wait before answering, so tests can kill a process mid-turn."""

    @property
    def _llm_type(self) -> str:
        return "staffroom-simulated"

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._generate(messages, stop, **kwargs)

    def reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        """The deterministic answer to ``messages``."""
        brief = find_brief(messages)
        heard = _last_human(messages, brief.get("humans", []))
        if brief.get("purpose") == "select":
            return AIMessage(content=self._select(brief, heard))
        if brief.get("quiet") == 0:  # a quiet fire whose message lists nothing to check
            return AIMessage(
                content=NOTHING_TO_REPORT("en" if brief.get("language") == "en" else "zh")
            )
        english = brief.get("language") == "en"
        step = brief.get("step")
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            if _called(messages) == "memory":
                return AIMessage(content=self._after_memory(brief, last, english))
            return AIMessage(content=self._after_tool(brief, last, english))
        bound = _tool_names(kwargs.get("tools"))
        if "memory" in bound and (call := self._remember(brief, heard)):
            return call
        # A step that declares products asks for files, whatever tools it lists.
        if (
            step
            and "write_file" in bound
            and ("write_file" in step["tools"] or step.get("produces"))
        ):
            return self._write_step_output(brief, step, heard, english)
        return AIMessage(content=self._speak(brief, step, heard, english))

    def _select(self, brief: TurnBrief, last_human: str) -> str:
        # Pick whoever the last human message names (id, role or display name), else the
        # first candidate: predictable, and never nobody.
        candidates = brief.get("candidates", [])
        lowered = last_human.lower()
        for candidate in candidates:
            for name in (
                candidate.get("id", ""),
                candidate.get("role", ""),
                candidate.get("name", ""),
            ):
                if name and name.lower() in lowered:
                    return candidate["id"]
        return candidates[0]["id"] if candidates else ""

    def _speak(
        self, brief: TurnBrief, step: StepState | None, last_human: str, english: bool
    ) -> str:
        role = brief.get("role", "")
        name = brief.get("display_name") or brief.get("employee", "employee")
        heard = snippet(last_human, 40) if last_human else ""
        language = "en" if english else "zh"
        voice = _VOICES.get(role, GENERIC_VOICE)(language)
        task = STEP_TASK(language, n=step["n"], do=step["do"]) if step else MESSAGE_TASK(language)
        text = SPEAKS(language, name=name, voice=voice, task=task)
        if heard:
            text += HEARD(language, heard=heard)
        return text + PROPOSAL(language)

    def _write_step_output(
        self, brief: TurnBrief, step: StepState, heard: str, english: bool
    ) -> AIMessage:
        employee = brief.get("employee", "employee")
        # The step's declared products; else the file its text names ("... 写入 outline.md");
        # else a per-step file.
        named = _FILE_NAME.search(step["do"])
        paths = list(step.get("produces") or []) or [
            named.group(0) if named else f"step{step['n']:02d}-{employee}.md"
        ]
        heard = snippet(heard, 80)
        body = [f"# {step['do']}", "", f"- author: {employee} (simulated)", f"- step: {step['n']}"]
        if heard:
            body.append(f"- input: {heard}")
        return AIMessage(
            content=WRITING_OUTPUT("en" if english else "zh"),
            tool_calls=[
                {
                    "name": "write_file",
                    "args": {"path": path, "content": "\n".join(body) + "\n"},
                    "id": f"call-{employee}-{step['n']}" + (f"-{i}" if i else ""),
                    "type": "tool_call",
                }
                for i, path in enumerate(paths)
            ],
        )

    def _remember(self, brief: TurnBrief, heard: str) -> AIMessage | None:
        """A memory tool call for a simple statement of fact (see framework.statements)."""
        memory = brief.get("memory", {})
        for fact in stated_facts(heard):
            existing = memory.get(fact.section, [])
            if fact.entry in existing:
                continue  # already remembered: nothing to do
            key = fact.entry.split(":")[0]
            old = next(
                (e for e in existing if e.replace("：", ":").split(":")[0].strip() == key), None
            )
            args = {
                "action": "replace" if old else "add",
                "section": fact.section,
                "content": fact.entry,
            }
            if old:
                args["old"] = old
            call_id = f"call-memory-{brief.get('employee', 'employee')}"
            return AIMessage(
                content="",
                tool_calls=[{"name": "memory", "args": args, "id": call_id, "type": "tool_call"}],
            )
        return None

    def _after_memory(self, brief: TurnBrief, result: ToolMessage, english: bool) -> str:
        name = brief.get("display_name") or brief.get("employee", "employee")
        saved = str(result.content)
        if result.status == "error":
            return NOT_NOTED("en" if english else "zh", name=name, saved=snippet(saved, 80))
        if LANGUAGE_KEY in saved:
            # The preference just saved applies to this very reply.
            english = (
                saved.split(LANGUAGE_KEY, 1)[1].split("(")[0].strip(" :：").startswith("English")
            )
        return NOTED("en" if english else "zh", name=name, saved=snippet(saved, 80))

    def _after_tool(self, brief: TurnBrief, result: ToolMessage, english: bool) -> str:
        name = brief.get("display_name") or brief.get("employee", "employee")
        outcome = snippet(str(result.content), 80)
        step = brief.get("step")
        task = step["do"] if step else ""
        return TOOL_DONE("en" if english else "zh", name=name, task=task, outcome=outcome)
