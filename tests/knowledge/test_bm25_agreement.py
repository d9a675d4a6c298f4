"""Our FTS5 ranking agrees with rank_bm25 on the same words and parameters.

Both sides see the same tokens (``index_tokens``), k1 = 1.2 and b = 0.75. rank_bm25's
``BM25Okapi`` floors a negative idf at ``epsilon * average idf``; FTS5 computes
idf = ln((N - n + 0.5) / (n + 0.5)) and floors it at 1e-6 when it is <= 0, so the reference
overrides ``_calc_idf`` with exactly that (no epsilon can: rank_bm25's floor depends on the
corpus's average idf and leaves an idf of exactly 0 alone).

Top-10 lists are compared by score, with a tolerance: documents tied on score may come in any
order, and documents matched only by words in half the corpus or more (idf floored at 1e-6,
which our index leaves out of such queries) count as not matched.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

from framework.knowledge.documents import Document, Partition, index_tokens
from framework.knowledge.index import KnowledgeIndex
from framework.knowledge.tokens import tokenize

K1, B = 1.2, 0.75
TOLERANCE = 1e-4  # far above float noise; far below any word with a real idf
FLOOR_ONLY = 1e-4  # a reference score below this comes from floored (1e-6) idfs alone

ZH = """
部署 集群 灰度 发布 回滚 预案 监控 告警 阈值 容量 评估 接口 兼容 数据 迁移 权限 审计 缓存 网关 限流
配置 中心 版本 需求 评审 设计 方案 文档 测试 用例 上线 复盘 事故 原因 客户 反馈 预算 季度 目标 计划
风险 依赖 延期 里程碑 周报 会议 纪要 负责人 流程 规范 性能 优化 日志 指标 存储 备份 恢复 安全 漏洞
升级 迭代 产品 体验 用户 增长 留存
""".split()  # noqa: SIM905 (one line per row reads better than 100 quoted words)
EN = """
deploy cluster rollback canary alert latency throughput
cache gateway config release review design api schema
migration backup restore incident postmortem budget roadmap
kubernetes k8s redis kafka postgres grafana sla slo oncall
feature flag experiment
""".split()  # noqa: SIM905 (one line per row reads better than 100 quoted words)
COMMON = "项目"  # in ~60% of documents: idf floored, left out of queries that have rarer words


class FtsBM25(BM25Okapi):  # type: ignore[misc]
    """BM25Okapi with FTS5's idf: ln((N - n + 0.5) / (n + 0.5)), <= 0 -> 1e-6."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, n in nd.items():
            idf = math.log((self.corpus_size - n + 0.5) / (n + 0.5))
            self.idf[word] = idf if idf > 0 else 1e-6


def zipf_pick(rng: random.Random, words: list[str]) -> str:
    return words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)]


def corpus(size: int, seed: int = 20250101) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(size):
        parts = [
            zipf_pick(rng, ZH if rng.random() < 0.75 else EN) for _ in range(rng.randint(3, 30))
        ]
        if rng.random() < 0.6:
            parts.insert(rng.randrange(len(parts) + 1), COMMON)
        text = "".join(p if p in ZH or p == COMMON else f" {p} " for p in parts)  # Chinese unspaced
        docs.append(
            Document(f"doc{i:04d}", "shared", text, title=rng.choice(["", zipf_pick(rng, ZH)]))
        )
    return docs


def queries(docs: list[Document], count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.6:  # words a document holds
            words = index_tokens(rng.choice(docs).title, rng.choice(docs).text) or ["空"]
            out.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 4)))))
        elif kind < 0.8:  # a very common word with a rarer one
            out.append(f"{COMMON} {rng.choice(ZH + EN)}")
        elif kind < 0.9:  # vocabulary words, any mix
            out.append(" ".join(rng.choice(ZH + EN) for _ in range(rng.randint(1, 5))))
        else:  # words nobody wrote, with one that exists
            out.append(f"不存在的词 nonexistentword {rng.choice(ZH)}")
    return out


def agrees(ours: list[tuple[str, float]], scores: Any, ids: list[str]) -> bool:
    """Same top-10 by score within TOLERANCE (ties in any order); our scores are the
    reference's scores of the same documents; what we leave out is floor-only."""
    ranked = sorted(((float(s), ids[i]) for i, s in enumerate(scores) if s > 0), reverse=True)
    top = ranked[:10]
    by_id = dict((doc_id, score) for score, doc_id in ranked)
    if any(abs(by_id.get(doc_id, -1.0) - score) > TOLERANCE for doc_id, score in ours):
        return False
    if any(abs(a - b) > TOLERANCE for (_, a), (b, _) in zip(ours, top, strict=False)):
        return False
    return all(score < FLOOR_ONLY for score, _ in top[len(ours) :])


async def test_top10_agrees_with_rank_bm25(tmp_path: Path) -> None:
    docs = corpus(400)
    index = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    await index.upsert(*docs)
    # Isolated documents share nothing with open scores: N, avgdl and idf are per partition.
    secret = [
        Document(f"s{i}", "isolated", d.text, partition=Partition.ISOLATED)
        for i, d in enumerate(docs[:50])
    ]
    await index.upsert(*secret)

    reference = FtsBM25([index_tokens(d.title, d.text) for d in docs], k1=K1, b=B)
    ids = [d.doc_id for d in docs]
    asked = queries(docs, 300)
    failed = []
    for query in asked:
        result = await index.search(query, limit=10)
        ours = [(hit.doc_id, hit.score) for hit in result.hits]
        scores = reference.get_scores(list(dict.fromkeys(tokenize(query))))
        if not agrees(ours, scores, ids):
            failed.append(query)
    await index.close()
    share = 1 - len(failed) / len(asked)
    assert share >= 0.99, f"agreement {share:.3f}; first disagreements: {failed[:5]}"
    assert sum(1 for q in asked if COMMON in q) >= 50  # the common-word path was exercised
