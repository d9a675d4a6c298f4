"""Issue 20's broken-state cases (items 11-15) for ``hostile_input.py``: each breaks a data
folder or project the way the broken-state run did and judges what a person sees."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

from hostile_input import ROOT, Verdict, case, clear_error, run, works


def _damage(store: Path) -> None:
    # 8 KB of random bytes at offset 4096: the schema page stays whole, so the store opens
    # and the damage surfaces at the first query that reaches those pages.
    for part in store.parent.glob(f"{store.name}-*"):
        part.unlink()
    with store.open("r+b") as handle:
        handle.seek(4096)
        handle.write(random.Random(20).randbytes(8192))


@case("8 KB of random bytes inside each store", "run (new, resume), dm: one error + doctor")
def _damaged_pages(work: Path) -> Verdict:
    verdicts = []
    for name in ("sops.sqlite", "checkpoints.sqlite"):
        data = work / f"data-{name}"
        env = {"STAFFROOM_HOME": str(data)}
        run(work, "run", "tech-article", "--room", "r1", env=env)
        run(work, "dm", "pm", "--user", "alice", stdin="hello\n", env=env)
        _damage(data / name)
        for args in (
            ("run", "tech-article", "--room", "new"),
            ("run", "tech-article", "--room", "r1"),
            ("dm", "pm", "--user", "alice"),
        ):
            verdicts.append(
                clear_error(
                    run(work, *args, stdin="hi\n", env=env), f"{name} is damaged", "doctor --repair"
                )
            )
    bad = [got for ok, got in verdicts if not ok]
    return not bad, bad[0] if bad else f"{len(verdicts)} commands: {verdicts[0][1]}"


@case("validate where run refuses (3 breakages)", "validate exit 1 with run's problem")
def _validate_like_run(work: Path) -> Verdict:
    proj = work / "proj"
    card = proj / "sop_library" / "tech_article" / "v1.md"
    run(work, "run", "tech-article", "--room", "first")
    original = card.read_text("utf-8")
    breakages = {
        "second card, same id": lambda: shutil.copy(
            proj / "agents/pm.yaml", proj / "agents/pm_copy.yaml"
        ),
        "version 5 after 1": lambda: (card.parent / "v5.md").write_text(
            original.replace("version: 1", "version: 5"), encoding="utf-8"
        ),
        "v1 edited in place": lambda: card.write_text(
            original.replace("goal: ", "goal: edited "), encoding="utf-8"
        ),
    }
    missed = []
    for how, breakage in breakages.items():
        breakage()
        refused = run(work, "run", "tech-article", "--room", "second")
        checked = run(work, "validate", str(proj))
        problem = refused.err.removeprefix("error: ").splitlines()[0] if refused.err else ""
        if refused.rc != 2 or checked.rc != 1 or not problem or problem not in checked.out:
            missed.append(f"{how}: run {refused.rc}, validate {checked.rc}")
        (proj / "agents/pm_copy.yaml").unlink(missing_ok=True)
        (card.parent / "v5.md").unlink(missing_ok=True)
        card.write_text(original, encoding="utf-8")
    return not missed, "; ".join(missed) or "3 of 3 found by validate"


@case("memory of an unknown employee", "exit 2, did-you-mean")
def _unknown_employee(work: Path) -> Verdict:
    return clear_error(
        run(work, "memory", "desginer", "--user", "alice"),
        "unknown employee",
        "did you mean 'designer'",
    )


@case("--data-dir that is a file: run, dm, history", "says it is a file")
def _data_dir_file(work: Path) -> Verdict:
    file = work / "notes.txt"
    file.write_text("x\n", encoding="utf-8")
    verdicts = [
        clear_error(run(work, *args, "--data-dir", str(file)), "is a file, not a folder")
        for args in (("run", "tech-article"), ("dm", "pm"), ("history", "room:x"))
    ]
    bad = [got for ok, got in verdicts if not ok]
    return not bad, bad[0] if bad else verdicts[0][1]


_SHARED_TOPIC = """
from datetime import date
from pathlib import Path
from framework.knowledge.base import KnowledgeBase
from framework.specs.knowledge_file import KnowledgeConfig
kb = KnowledgeBase(Path({data!r}), KnowledgeConfig(), today=lambda: date(2026, 5, 30))
kb.library.store("pm", "shared").update("gate", "team", add=["the door code is 4711 walrus"],
                                         title="door code")
"""


@case("forget a library topic's only text", "search finds nothing (title, front matter)")
def _forget_shell(work: Path) -> Verdict:
    data = work / "data"
    code = _SHARED_TOPIC.format(data=str(data))
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    before = run(work, "search", "door code", "--json")
    forgot = works(run(work, "forget", "the door code is 4711 walrus"))
    found = {
        words: [
            json.loads(line)["doc"]
            for line in run(work, "search", words, "--json").out.splitlines()
        ]
        for words in ("door code", "door", "created", "team")
    }
    shells = {w: docs for w, docs in found.items() if docs}
    ok = bool(before.out.strip()) and forgot[0] and not shells
    return ok, f"found before: {bool(before.out.strip())}; after forget: {shells or 'nothing'}"
