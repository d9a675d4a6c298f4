"""Extraction passes: a chat model's structured answer, or the deterministic rules.

The rules are the offline path (the simulator is a test double, it does not read): the first
pass takes only explicitly marked lines (``决定：``, ``TODO:``, a journal's ``question`` entry),
the re-scan the gate asks for also reads keywords anywhere in a sentence (``决定``, ``需要``,
``发现``, ``should``, a closing ``？``). With a model both passes go through
``extract_knowledge.j2``; an unusable answer is retried once, then the rules stand in and the
pass says why (``Pass.fallback``).
"""

from __future__ import annotations

import re

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from framework.knowledge.gate import ExtractionInput, Extractor, Pass, Rescan, expected_band
from framework.knowledge.items import Category, ExtractionAnswer, Item, ItemAnswer
from framework.language import main_language
from framework.models.profile import ModelProfile
from framework.models.structured import answer_format, ask_structured
from framework.prompts.environment import PromptRenderer

RULES = "rules (offline simulator)"

_MARK_WORDS: tuple[tuple[Category, str], ...] = (
    ("task", r"todo|待办|任务|task"),
    ("goal", r"目标|goal"),
    ("decision", r"决定|决策|decision|decided"),
    ("question", r"问题|疑问|question"),
    ("improvement", r"改进|建议|improvement|proposal"),
    ("pattern", r"规律|模式|pattern"),
    ("knowledge", r"知识|发现|心得|learned|lesson|knowledge|observation|观察"),
)
_MARKED = [(c, re.compile(rf"^(?:{words})\s*[:：]\s*", re.I)) for c, words in _MARK_WORDS]
_KEY_WORDS: tuple[tuple[Category, str], ...] = (
    ("decision", r"决定|定下|确定了|拍板|decided|we will|agreed"),
    ("improvement", r"应该|改进|优化|下次|建议|should|improve|next time|better to"),
    ("task", r"需要|要做|待办|记得|跟进|负责|todo|need to|follow up|must"),
    ("goal", r"目标|争取|达到|goal|aim to|target"),
    ("pattern", r"每次|总是|往往|通常|规律|always|every time|usually|tends to"),
    ("knowledge", r"发现|原来|学到|因为|导致|原因|事实|learned|turns out|because|caused by"),
)
_KEYWORDS = [(c, re.compile(words, re.I)) for c, words in _KEY_WORDS]
_GENERAL = re.compile(r"通用|所有人|大家都|全员|团队都|everyone|in general|all teams", re.I)
_FOR = re.compile(r"@([\w\-]+)")
_TOPIC = re.compile(r"#([\w\-]+)")
_SPEAKER = re.compile(r"^([\w\-]{1,32})\s*[:：]\s*(?=\S)")
_ENTRY = re.compile(r"^[-*]\s*(?:(note|observation|question)\s*[:：]\s*)?", re.I)


def _sentences(text: str) -> list[tuple[str, str | None, str | None]]:
    """``(sentence, journal entry type, speaker)`` in order; bullets and labels stripped."""
    out: list[tuple[str, str | None, str | None]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry = _ENTRY.match(line)
        kind = entry.group(1).lower() if entry and entry.group(1) else None
        line = line[entry.end() :] if entry else line
        speaker = None
        if kind is None and not any(rx.match(line) for _, rx in _MARKED):
            # A speaker's prefix ("alice: ...") is not part of what was said.
            said = _SPEAKER.match(line)
            if said:
                speaker, line = said.group(1), line[said.end() :]
        for part in re.split(r"(?<=[。！？!?])\s*|(?<=\.)\s+", line):
            if len(part.strip()) >= 2:
                out.append((part.strip(), kind, speaker))
    return out


def _item(category: Category, text: str, speaker: str | None) -> Item:
    who = _FOR.search(text)
    topic = _TOPIC.search(text)
    general = category == "knowledge" and bool(_GENERAL.search(text))
    return Item(
        category,
        text,
        for_whom=who.group(1) if who else None,
        topic=topic.group(1) if topic else None,
        general=general,
        said_by=speaker,
    )


def rule_pass(source: ExtractionInput, rescan: Rescan | None) -> Pass:
    """The deterministic pass: marked lines; on a re-scan, keywords too (see module doc)."""
    items: list[Item] = []
    for sentence, kind, speaker in _sentences(source.text):
        marked = next((c for c, rx in _MARKED if rx.match(sentence)), None)
        if marked is not None:
            body = next(rx.sub("", sentence, count=1) for c, rx in _MARKED if c == marked)
            items.append(_item(marked, body.strip() or sentence, speaker))
        elif kind == "question" or (rescan is not None and sentence.endswith(("？", "?"))):
            items.append(_item("question", sentence, speaker))
        elif rescan is not None:
            hit = next((c for c, rx in _KEYWORDS if rx.search(sentence)), None)
            if hit is not None:
                items.append(_item(hit, sentence, speaker))
    if rescan is not None and any("more than" in r for r in rescan.reasons):
        # Asked to merge: keep the first items of each category, in the band.
        return Pass(_trim(items, len(source.text)), RULES)
    return Pass(items, RULES)


def _trim(items: list[Item], chars: int) -> list[Item]:
    _, high = expected_band(chars)
    kept: list[Item] = []
    per = max(1, high // 7)
    for category in dict.fromkeys(i.category for i in items):
        kept += [i for i in items if i.category == category][:per]
    return kept[:high]


async def rules_extractor(source: ExtractionInput, rescan: Rescan | None) -> Pass:
    """:func:`rule_pass` as an :data:`Extractor`."""
    return rule_pass(source, rescan)


def model_extractor(
    model: BaseChatModel,
    renderer: PromptRenderer,
    profile: ModelProfile,
    *,
    retries: int = 2,
    backoff: float = 1.0,
) -> Extractor:
    """Extract with a chat model through ``extract_knowledge.j2``; the rules stand in when its
    answer stays unusable or it cannot be called (the pass says why)."""
    example = ExtractionAnswer(
        items=[
            ItemAnswer(category="decision", text="<what was decided>", topic="<topic>"),
            ItemAnswer(category="task", text="<what must be done>", for_whom="<who>"),
        ]
    )
    fmt = answer_format(ExtractionAnswer, [example])

    def check(answer: ExtractionAnswer) -> str | None:
        if any(i.text.startswith("<") and i.text.endswith(">") for i in answer.items):
            return "it repeats the example's placeholders instead of reading the input"
        return None

    async def extract(source: ExtractionInput, rescan: Rescan | None) -> Pass:
        context = {
            "employee": source.employee,
            "rescan": rescan,
            "too_many": rescan is not None and any("more than" in r for r in rescan.reasons),
            "answer_format": fmt,
        }
        # The frame in the language the input is written in: a weak model answers in the
        # language of its instructions, and items must be in the input's.
        language = main_language(source.text)
        prompt = renderer.render("extract_knowledge.j2", context, language=language)
        # The newest part of the input, about half the window for Chinese text (a character
        # is about a token), less for English: the rest is for the instructions and answer.
        budget = max(400, profile.input_budget // 2)
        text = source.text if len(source.text) <= budget else source.text[-budget:]
        answer = await ask_structured(
            model,
            [SystemMessage(content=prompt), HumanMessage(content=text)],
            ExtractionAnswer,
            profile,
            examples=[example],
            check=check,
            retries=retries,
            backoff=backoff,
        )
        if answer.value is not None:
            return Pass([i.to_item() for i in answer.value.items], profile.label)
        fallback = rule_pass(source, rescan)
        return Pass(fallback.items, RULES, answer.fallback_reason or "no answer")

    return extract
