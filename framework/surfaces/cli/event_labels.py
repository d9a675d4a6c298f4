"""The words of a rendered transcript (why someone speaks, tool results, outcomes), in both
languages; :mod:`framework.surfaces.cli.render` lays them out."""

from __future__ import annotations

from framework.phrases import Phrase

WHY_LABELS = {
    "sop_step": Phrase(en="SOP step", zh="SOP 步骤"),
    "mention": Phrase(en="@mention", zh="被 @"),
    "selector": Phrase(en="selector", zh="轮到发言"),
    "direct": Phrase(en="DM", zh="私聊"),
    "delivered": Phrase(en="delivered by a schedule", zh="定时任务投递"),
}
WHY_SOP_STEP, WHY_MENTION, WHY_SELECTOR, WHY_DIRECT, WHY_DELIVERED = WHY_LABELS.values()
MORE = Phrase(
    en="… {more} more characters: {command}",
    zh="……还有 {more} 个字符：{command}",
)
SESSION_ENDED = Phrase(
    en="── session ended ({reason}, {events} events); the next message starts a new one ──",
    zh="── 会话已结束（{reason}，{events} 个事件）；下一条消息开始新会话 ──",
)
STEP = Phrase(
    en="── step {n}: {do} ({speakers})",
    zh="── 第 {n} 步：{do}（{speakers}）",
)
HUMAN = Phrase(
    en="(human)",
    zh="（真人）",
)
TOOL_OK = Phrase(
    en="ok",
    zh="成功",
)
TOOL_FAILED = Phrase(
    en="failed",
    zh="失败",
)
FALLBACK = Phrase(
    en="⚠ fallback: {what} → {used} ({reason})",
    zh="⚠ 兜底：{what} → {used}（{reason}）",
)
WAITING = Phrase(
    en="… waiting for {who} ({reason})",
    zh="…… 等待 {who}（{reason}）",
)
ENDED = Phrase(
    en="■ ended: {reason}",
    zh="■ 结束：{reason}",
)
ENDED_COUNTS = Phrase(
    en="(steps {done}/{total}, turns {turns}, sop {sop})",
    zh="（步骤 {done}/{total}，发言 {turns} 次，SOP {sop}）",
)
NO_SOP = Phrase(
    en="no SOP",
    zh="无 SOP",
)
NOTHING_EXTRACTED = Phrase(
    en="◆ nothing to extract: {why}",
    zh="◆ 没有可提取的内容：{why}",
)
EXTRACTED = Phrase(
    en="◆ SOP draft {ref} extracted:",
    zh="◆ 已提取 SOP 草稿 {ref}：",
)
REVIEW = Phrase(
    en="review: {how}",
    zh="审阅：{how}",
)
WHY = Phrase(
    en="why: {why}",
    zh="原因：{why}",
)
SUCCESS = Phrase(
    en="success",
    zh="成功",
)
NOT_SUCCESS = Phrase(
    en="not a success",
    zh="未成功",
)
OUTCOME = Phrase(
    en="◆ outcome of {sop}: {result}",
    zh="◆ {sop} 的结果：{result}",
)
SCORE = Phrase(
    en="score {score}",
    zh="评分 {score}",
)
LATE_OUTCOME = Phrase(
    en="◆ outcome of {sop} after late feedback: {result}",
    zh="◆ 补充反馈后 {sop} 的结果：{result}",
)
OUTCOME_COUNTS = Phrase(
    en=" ({counts})",
    zh="（{counts}）",
)
COUNT_SEPARATOR = Phrase(
    en=", ",
    zh="，",
)
CORRECTIONS = Phrase(
    en="corrections {n}",
    zh="纠正 {n} 次",
)
OFF_SOP_TURNS = Phrase(
    en="off-SOP turns {n}",
    zh="偏离 SOP 的发言 {n} 次",
)
HUMAN_INTERVENTIONS = Phrase(
    en="human interventions {n}",
    zh="人工介入 {n} 次",
)
COUNTS = (CORRECTIONS, OFF_SOP_TURNS, HUMAN_INTERVENTIONS)
"""The counts an outcome may hold, in the order shown (late feedback holds only its
corrections)."""
ASKED_AGAIN = Phrase(
    en="◆ the runs ask for {ref} again ({status})",
    zh="◆ 这些运行再次要求 {ref}（{status}）",
)
PROPOSED = Phrase(
    en="◆ proposed {ref} ({status}): {why}",
    zh="◆ 提议 {ref}（{status}）：{why}",
)


ON_TRIAL = Phrase(
    en="{sop} (on trial beside {best})",
    zh="{sop}（试用中，对照 {best}）",
)
BESIDE_TRIAL = Phrase(
    en="{sop} (the best; {trial} on trial elsewhere)",
    zh="{sop}（最佳；{trial} 另在试用）",
)
