"""Durable facts people state about themselves, recognised by fixed rules.

Used where no model is involved or wanted: the offline simulator (to call the ``memory``
tool for simple statements), the extractive consolidation path, and a turn whose real model
did not call the memory tool on such a statement (recorded as a fallback). The rules are
deliberately literal and about work: a name (whole), a role, a reply language, a preference
("I prefer…", "User prefers…", "我喜欢…"), and a standing fact about the person's team,
project or deadlines (who leads a team, a ticket's or order's state, where they live).
Personal trivia (a favourite colour, pets, hobbies) is left to a real model, whose facts the
write gate checks against what was said. Labels follow the language of the statement
(``name: Maria Chen``, ``姓名: 王芳``). Pure text rules at the base level, so the simulator
(models/) and memory/ both read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from framework.language import is_english
from framework.phrases import Phrase


@dataclass(frozen=True, slots=True)
class Fact:
    """One MEMORY.md entry in a named section."""

    section: str
    """``identity``, ``project``, ``preferences`` or ``facts``."""
    entry: str
    """``key: value`` for an attribute (a later value of the key replaces it), else the
    statement itself."""


LANGUAGE_LABEL = Phrase(
    en="reply language",
    zh="偏好语言",
)
NAME_LABEL = Phrase(
    en="name",
    zh="姓名",
)
ROLE_LABEL = Phrase(
    en="role",
    zh="角色",
)
LANGUAGE_KEY = LANGUAGE_LABEL("zh")
"""The Chinese label, which files written before labels followed the language carry."""
NAME_KEY = NAME_LABEL("zh")
_LANGUAGE_KEYS = frozenset({LANGUAGE_KEY, LANGUAGE_LABEL("en"), "preferred language", "language"})

_EN = r"(?:英文|英语|english)"
_ZH = r"(?:中文|汉语|普通话|chinese)"
_LANGUAGE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"(?:用|说|讲|写){_EN}|{_EN}(?:回复|回答|交流)", re.I), "English"),
    (re.compile(rf"(?:用|说|讲|写){_ZH}|{_ZH}(?:回复|回答|交流)", re.I), "中文"),
    (
        re.compile(r"\b(?:reply|answer|respond|talk|speak|write)\b[^.?!]*\bin english\b", re.I),
        "English",
    ),
    (
        re.compile(r"\b(?:reply|answer|respond|talk|speak|write)\b[^.?!]*\bin chinese\b", re.I),
        "中文",
    ),
]
_NAME_WORD = r"[A-Z][\w'-]{0,30}"
_START = r"(?:^|(?<=[.!?]\s))"
"""Where a sentence starts."""
_TO_END = r"[^\n]*?(?:[.!?](?=\s|$)|$)"
"""The rest of the sentence, with its full stop: a standing fact is kept whole."""
_NAME_RULES = [
    re.compile(r"我(?:叫|的名字是|的名字叫)\s*([A-Za-z][\w -]{0,30}[\w]|[\u4e00-\u9fff·]{1,8})"),
    # A name is the capitalised words after the phrase, all of them ("Maria Chen").
    re.compile(
        r"\b(?:[Cc]all me|[Mm]y name is|[Mm]y name's|I'm called)\s+"
        rf"({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,3}})"
    ),
]
_ROLE_WORDS = (
    r"lead|manager|engineer|developer|designer|architect|analyst|director|owner|admin|"
    r"administrator|scientist|researcher|writer|editor|tester|intern|founder|head of [\w ]+|"
    r"product manager|pm|cto|ceo|cfo|vp|officer|consultant|coordinator|specialist|rep|agent"
)
_ROLE_RULES = [
    re.compile(
        rf"\b(?:I am|I'm|I work as|my role is|my job is)\s+((?:an? |the )?(?:[\w-]+ ){{0,4}}"
        rf"(?:{_ROLE_WORDS}))\b(?! of\b)((?: (?:on|for|at|in) [\w -]{{2,40}}\w)?)",
        re.I,
    ),
    re.compile(
        r"我是(?:这里的|团队的|我们的)?([\u4e00-\u9fff]{0,8}(?:负责人|经理|工程师|设计师|主管|总监|组长|产品经理|运营|测试|架构师))"
    ),
    re.compile(r"我(?:负责|担任)([\u4e00-\u9fff]{2,12})"),
]
_PREFERENCE_RULES = [
    # First person: kept as the person's own words without the pronoun ("Prefers …").
    re.compile(r"\bI(?:'d| would)? (prefer|like) ((?:[\w-]+ )[^.!?\n]{2,160})", re.I),
    re.compile(r"我(?:更|比较)?(喜欢|偏好|习惯|倾向于?)([^。！？\n]{2,80})"),
]
_THIRD_PERSON = re.compile(
    rf"(?:^|(?<=[.!?]\s))((?:The )?[Uu]ser(?:'s)? (?:prefers|likes|would rather)\b{_TO_END})"
)
_WORK = (
    r"team|project|company|manager|deadline|release|launch|product|client|customer|"
    r"service|stack|repo|repository|codebase|on-?call|sprint|standups?|meetings?|office|"
    r"timezone|department|budget|roadmap|report|review|demo|migration|deploy(?:s|ment)?|"
    r"workflow|process"
)
_ITEMS = r"order|ticket|incident|issue|bug|case|task|shipment|invoice|request|pr|pull request"
_STATES = (
    r"priority|severity|p\d|sev\d|pending|open|closed|blocked|on hold|in progress|in review|"
    r"waiting|shipped|resolved|assigned to|owned by"
)
_STANDING = [
    # Someone's team / project / deadline, stated as a standing fact, kept whole.
    re.compile(
        rf"{_START}((?:The )?(?:[Uu]ser's|[Mm]y|[Oo]ur) (?:[\w-]+ ){{0,2}}(?:{_WORK})\b{_TO_END})"
    ),
    re.compile(
        rf"{_START}((?:The |[Oo]ur |[Mm]y )?(?:[\w-]+ ){{0,3}}(?:{_WORK})\b[^\n.!?]{{0,80}}"
        r"\b(?:is due|are due|deadline|due on|due by|moved to|was moved|pushed back|postponed|"
        r"rescheduled|is on|ships on|launches on)\b" + _TO_END + ")"
    ),
    # Where the person lives or works from ("I live at 42 Birch Street in Portland.").
    re.compile(
        rf"{_START}(I(?: live| am based|'m based| work from) (?:in|at|near|out of) {_TO_END})"
    ),
    # Who holds a role on a team ("Priya is the lead on the payments team."): a name, not a
    # pronoun or "User" (an invented profile reads "User is a former chess player ...").
    re.compile(
        rf"{_START}((?!(?:The|This|That|It|He|She|They|We|User|Our|My)\b)[A-Z][a-z][\w'-]*"
        rf"(?: [A-Z][a-z][\w'-]*)? is (?:the |our |a |an )?(?:new |acting )?(?:[\w-]+ ){{0,2}}"
        rf"(?:{_ROLE_WORDS}) (?:on|of|for) {_TO_END})"
    ),
    # A work item's standing state ("Order ORTAND-88 is currently pending.", "The migration
    # ticket is priority P2.").
    re.compile(
        rf"{_START}((?:The |Our |My )?(?:[\w-]+ ){{0,3}}(?i:{_ITEMS})(?: #?[\w-]*\d[\w-]*)? "
        rf"(?:is|are) (?:currently |now |still )?(?i:{_STATES})\b{_TO_END})"
    ),
    re.compile(r"((?:我们|我的)(?:团队|项目|公司|部门|产品|客户)[^。！？\n]{4,80}[。！？]?)"),
    re.compile(
        r"([^。！？\n]{0,30}(?:截止|交付|上线|发布|评审|例会)[^。！？\n]{0,20}(?:日期|时间)?(?:是|在|定在|改到|推迟到|提前到)[^。！？\n]{2,40}[。！？]?)"
    ),
]


_NOT_STATED = re.compile(
    r"[?？]\s*$|[吗呢]\s*[。！]?\s*$|"
    r"^\s*(?:has|have|had|is|are|was|were|did|does|do|could|can|should|would|will|may|shall|"
    r"who|what|when|where|why|how|which|if|unless|whether|in case|once)\b|"
    r"^\s*(?:如果|要是|假如|万一|是否|是不是)",
    re.IGNORECASE,
)


def states(text: str) -> bool:
    """Whether ``text`` states something: not a question ("Has the deadline moved?", "改到
    9 月 1 日了吗？") and not a condition ("If the deadline moves, tell me"). Only a statement
    may be kept as a fact or replace one."""
    return not _NOT_STATED.search(text)


def stated_facts(text: str) -> list[Fact]:
    """Facts the speaker states about themselves in ``text`` (at most one per attribute)."""
    english = is_english(text)
    lang = "en" if english else "zh"
    found: list[Fact] = []
    for pattern, value in _LANGUAGE_RULES:
        if pattern.search(text):
            found.append(Fact("preferences", f"{LANGUAGE_LABEL(lang)}: {value}"))
            break
    for pattern in _NAME_RULES:
        if match := pattern.search(text):
            found.append(Fact("identity", f"{NAME_LABEL(lang)}: {match.group(1).strip()}"))
            break
    for pattern in _ROLE_RULES:
        if match := pattern.search(text):
            role = re.sub(r"^(?:an?|the) ", "", "".join(g for g in match.groups() if g).strip())
            found.append(Fact("identity", f"{ROLE_LABEL(lang)}: {role}"))
            break
    if not any(f.section == "preferences" for f in found):
        found += _preferences(text)
    found += [
        Fact("facts", m.group(1).strip())
        for p in _STANDING
        for m in p.finditer(text)
        if states(m.group(1))  # "If ticket #4411 is blocked, call me." is no standing fact
    ]
    return list({f.entry: f for f in found}.values())


def _preferences(text: str) -> list[Fact]:
    said = [Fact("preferences", m.group(1).strip()) for m in _THIRD_PERSON.finditer(text)]
    for pattern in _PREFERENCE_RULES:
        for match in pattern.finditer(text):
            verb, rest = match.group(1), match.group(2).strip()
            rest = re.sub(r"[,，]?\s*please$", "", rest).rstrip(",，;；")
            if re.fullmatch(r"[a-z]+", verb):
                verb = verb.capitalize() + ("s" if not verb.endswith("s") else "")
            said.append(Fact("preferences", f"{verb} {rest}" if verb.isascii() else verb + rest))
    return said


def preferred_language(entries: list[str]) -> str | None:
    """``"en"`` or ``"zh"`` from a preferences section's language entry, if it has one."""
    for entry in entries:
        key, _, value = entry.replace("：", ":").partition(":")
        if key.strip().lower() in _LANGUAGE_KEYS:
            return "en" if value.strip().lower() in ("english", "英文", "英语") else "zh"
    return None
