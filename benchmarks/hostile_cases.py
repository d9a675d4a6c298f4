"""The cases ``hostile_input.py`` drives, in the issue's order: security, hangs, re-runs, errors."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from hostile_input import (
    ROOT,
    SCENARIO,
    SCRIPT,
    Ran,
    Verdict,
    api,
    case,
    clear_error,
    log_kinds,
    run,
    scenario,
    with_line,
    works,
)

TRIALS = 50
ESCAPE = Path("/tmp/staffroom-hostile-escape")


def waiting(work: Path, room: str = "r1") -> Ran:
    return run(work, "run", "tech-article", "--room", room)


# -- security -----------------------------------------------------------------------------


@case("humans with ../ in a scenario", "validate and run refuse; nothing outside")
def _humans_path(work: Path) -> Verdict:
    bad = with_line("humans: [author]", f'humans: ["../../../..{ESCAPE}"]')
    path = scenario(work, "evil", bad.replace("id: tech-article", "id: evil"))
    checked = clear_error(run(work, "validate", str(path)), "humans")
    ran = clear_error(run(work, "run", str(path)), "humans")
    escaped = ESCAPE.exists()
    return checked[0] and ran[0] and not escaped, f"{checked[1]} | escaped={escaped}"


@case("post(author='../..'), NUL author", "InputError; the room still answers")
def _author_path(work: Path) -> Verdict:
    ran = api(
        work,
        """
from framework.errors import InputError
room = await staff.room("r1", "tech-article")
[e async for e in room.start()]
for who in ("../../..", "a\\x00b", ""):
    try:
        [e async for e in room.post("hi", author=who)]
        print("ACCEPTED", repr(who))
    except InputError:
        pass
got = [e async for e in room.post("方向没问题", author="author")]
print("ANSWERED" if any(e.author != "author" for e in got) else "SILENT")
""",
    )
    ok = "ANSWERED" in ran.out and "ACCEPTED" not in ran.out and not ran.traceback
    return ok, ran.out.strip().replace("\n", " ")[:90] or ran.err.strip()[-90:]


@case("memory pm --user ../../sessions", "clear error, nothing read")
def _memory_user(work: Path) -> Verdict:
    return clear_error(run(work, "memory", "pm", "--user", "../../sessions"), "user")


@case("DM secret, then a room with two people", "secret in no room prompt")
def _leak(work: Path) -> Verdict:
    ran = api(
        work,
        """
from framework.models import ScriptedChatModel
model = ScriptedChatModel(replies=["好的。"] * 40)
injected = {"model_factory": lambda spec, who: model}  # as an embedder injects one
async with await Staffroom.open(settings=staff.settings, **injected) as staff:
    staff.memory.memory("pm", "alice").add("facts", "alice-secret: 我的工资是 12345")
    room = await staff.room("mixed", "tech-article")
    [e async for e in room.start()]
    [e async for e in room.post("我是 alice", author="alice")]
    [e async for e in room.post("我是 bob", author="bob")]
seen = "\\n".join(str(m.content) for call in model.calls for m in call)
print("CALLS", len(model.calls), "LEAK" if "12345" in seen else "CLEAN")
""",
    )
    ok = "CLEAN" in ran.out and "CALLS 0" not in ran.out
    return ok, ran.out.strip()[:90] or ran.err.strip()[-90:]


# -- hangs --------------------------------------------------------------------------------


def _card(work: Path) -> Path:
    return work / "proj" / "sop_library" / "tech_article" / "v1.md"


@case("published SOP card edited in place", "exit 2, no hang")
def _card_edited(work: Path) -> Verdict:
    waiting(work)
    card = _card(work)
    card.write_text(card.read_text("utf-8").replace("立题与提纲", "立题"), encoding="utf-8")
    return clear_error(run(work, "run", "tech-article", "--room", "r2"), "v1")


@case("SOP version gap (version: 5 after v1)", "clear error, no hang")
def _version_gap(work: Path) -> Verdict:
    text = _card(work).read_text("utf-8").replace("version: 1", "version: 5")
    (_card(work).parent / "v5.md").write_text(text, encoding="utf-8")
    return clear_error(run(work, "run", "tech-article"), "version")


@case("read-only data folder: run / sop list", "run: clear error; sop list works")
def _read_only(work: Path) -> Verdict:
    waiting(work)
    data = work / "data"
    modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        ran = clear_error(run(work, "run", "tech-article", "--room", "r2"))
        listed = works(run(work, "sop", "list"), "tech-article")
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    if os.geteuid() == 0:
        return listed[0], f"(root: permissions not enforced) sop list: {listed[1]}"
    return ran[0] and listed[0], f"run: {ran[1]} | sop list: {listed[1]}"


@case("truncated sops.sqlite / checkpoints.sqlite", "exit 2 naming the file, no hang")
def _truncated(work: Path) -> Verdict:
    waiting(work)
    results = []
    for name in ("sops.sqlite", "checkpoints.sqlite"):
        path = work / "data" / name
        for side in work.joinpath("data").glob(f"{name}-*"):
            side.unlink()
        whole = path.read_bytes()
        path.write_bytes(whole[:1500])
        results.append(clear_error(run(work, "run", "tech-article", "--room", "r1"), name))
        path.write_bytes(whole)
    return all(r[0] for r in results), " | ".join(r[1][:50] for r in results)


@case("600-byte YAML alias bomb", "validate: clear error at once")
def _alias_bomb(work: Path) -> Verdict:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    path = scenario(work, "bomb", "\n".join(lines) + "\n")
    return clear_error(run(work, "validate", str(path)))


@case("1 MB line in a script", "run finishes; transcript cut")
def _script_mb(work: Path) -> Verdict:
    script = work / "big.txt"
    script.write_text("author: " + "长" * 1_000_000 + "\n", encoding="utf-8")
    ran = run(work, "run", "tech-article", "--room", "r1", "--script", str(script))
    return works(ran, "more characters")


@case("20 MB line in a session log: history", "history finishes; text cut")
def _history_20mb(work: Path) -> Verdict:
    waiting(work)
    log = work / "data" / "sessions" / "room:r1.jsonl"
    event = {
        "id": "huge-1",
        "ts": "2026-12-01T00:00:00.000Z",
        "session": "room:r1",
        "kind": "message",
        "author": "author",
        "content": "字" * 20_000_000,
        "meta": {"human": True},
    }
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(event, ensure_ascii=False) + "\n")
    return works(run(work, "history", "room:r1"), "more characters")


# -- silent re-runs and losses ------------------------------------------------------------


def _script_lines(path: Path) -> list[str]:
    lines = path.read_text("utf-8").splitlines()
    return [ln.split(":", 1)[1].strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _slow_text() -> str:
    # A slow simulator, so a kill or a deletion lands inside a turn.
    slow = with_line(
        "max_turns: 30",
        "max_turns: 30\n  model:\n    provider: simulated\n    options: {delay: 0.2}",
    )
    return slow.replace("id: tech-article", "id: slow")


@case("kill-and-resume with a script (trials)", "each line stored once, every run ends")
def _kill_resume(work: Path) -> Verdict:
    script = work / "lines.txt"
    script.write_text(
        "author: 方向没问题，继续。\nauthor: @designer 图再简洁一点\nauthor: @pm 收尾\n",
        encoding="utf-8",
    )
    path = scenario(work, "slow", _slow_text())
    env = {
        **os.environ,
        "STAFFROOM_HOME": str(work / "data"),
        "STAFFROOM_PROJECT": str(work / "proj"),
    }
    rng = random.Random(8)
    doubled = unfinished = kills = 0
    for trial in range(TRIALS):
        cmd = [
            sys.executable,
            "-m",
            "framework",
            "run",
            str(path),
            "--room",
            f"k{trial}",
            "--script",
            str(script),
        ]
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(1.0, 4.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        resumed = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        events = [
            json.loads(x)
            for x in (work / "data" / "sessions" / f"room:k{trial}.jsonl")
            .read_text("utf-8")
            .splitlines()
        ]
        said = Counter(e["content"] for e in events if (e.get("meta") or {}).get("human"))
        doubled += sum(n - 1 for n in said.values() if n > 1)
        doubled += sum(1 for text in _script_lines(script) if said[text] == 0)
        if resumed.returncode != 0:
            unfinished += 1
    ok = doubled == 0 and unfinished == 0
    return (
        ok,
        f"{TRIALS} trials, {kills} killed mid-run: {doubled} doubled/lost lines, "
        f"{unfinished} resumes failed",
    )


@case("checkpoints.sqlite deleted while a room waits", "refused; no second entry")
def _ckpt_deleted(work: Path) -> Verdict:
    waiting(work)
    for p in (work / "data").glob("checkpoints.sqlite*"):
        p.unlink()
    ran = clear_error(
        run(work, "run", "tech-article", "--room", "r1", "--script", str(SCRIPT)), "doctor --repair"
    )
    entries = log_kinds(work, "room:r1")["plan"]
    return ran[0] and entries == 1, f"{ran[1][:70]} | entries={entries}"


@case("checkpoints.sqlite deleted mid-run", "refused after; one SOP run, one outcome")
def _ckpt_deleted_mid_run(work: Path) -> Verdict:
    path = scenario(work, "slow", _slow_text())
    env = {
        **os.environ,
        "STAFFROOM_HOME": str(work / "data"),
        "STAFFROOM_PROJECT": str(work / "proj"),
    }
    cmd = [sys.executable, "-m", "framework", "run", str(path), "--room", "m1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    # Mid-run: once the first step is logged (a fixed sleep missed the run on a busy machine,
    # deleting the store before the room had opened it).
    log = work / "data" / "sessions" / "room:m1.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b'"sop_step"' not in (
        log.read_bytes() if log.exists() else b""
    ):
        time.sleep(0.05)
    for p in (work / "data").glob("checkpoints.sqlite*"):
        p.unlink()
    proc.wait(timeout=120)
    again = clear_error(run(work, "run", str(path), "--room", "m1", "--script", str(SCRIPT)))
    fixed = works(run(work, "doctor", "--repair"))
    done = works(run(work, "run", str(path), "--room", "m1", "--script", str(SCRIPT)))
    kinds = log_kinds(work, "room:m1")
    ok = again[0] and fixed[0] and done[0] and kinds["outcome"] == 1 and kinds["plan"] <= 2
    steps = kinds["sop_step"]
    return ok, f"{again[1][:40]} | outcomes={kinds['outcome']} sop_steps={steps}"


@case("session log emptied under its checkpoint", "refused; names the log")
def _log_emptied(work: Path) -> Verdict:
    waiting(work)
    (work / "data" / "sessions" / "room:r1.jsonl").write_bytes(b"")
    return clear_error(run(work, "run", "tech-article", "--room", "r1"), "lost events")


@case("sops.sqlite deleted / emptied", "reported, not recreated")
def _sops_lost(work: Path) -> Verdict:
    waiting(work)
    sops = work / "data" / "sops.sqlite"
    for p in (work / "data").glob("sops.sqlite-*"):
        p.unlink()
    sops.unlink()
    first = clear_error(run(work, "sop", "list"), "sops.sqlite is missing")
    recreated = sops.exists()
    sops.write_bytes(b"")
    second = clear_error(run(work, "sop", "list"), "sops.sqlite is empty")
    return first[0] and second[0] and not recreated, f"{first[1][:60]} | recreated={recreated}"


@case("random bytes in both SQLite stores", "clear error; doctor --repair fixes")
def _random_bytes(work: Path) -> Verdict:
    waiting(work)
    for name in ("sops.sqlite", "checkpoints.sqlite"):
        for p in (work / "data").glob(f"{name}-*"):
            p.unlink()
        (work / "data" / name).write_bytes(os.urandom(8192))
    refused = clear_error(run(work, "run", "tech-article", "--room", "r1"), "doctor")
    fixed = works(run(work, "doctor", "--repair"), "no problems found")
    return refused[0] and fixed[0], f"{refused[1][:60]} | doctor: {fixed[1]}"


@case("GBK MEMORY.md, then a memory write", "write refused; bytes unchanged")
def _gbk(work: Path) -> Verdict:
    path = work / "data" / "memory" / "pm" / "alice" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    raw = "§ 关键事实\n- 喜欢简洁\n".encode("gbk")
    path.write_bytes(raw)
    ran = api(
        work,
        """
from framework.errors import StaffroomError
try:
    staff.memory.memory("pm", "alice").add("facts", "new fact")
    print("WRITTEN")
except StaffroomError as exc:
    print("REFUSED", exc)
""",
    )
    unchanged = path.read_bytes() == raw
    ok = "REFUSED" in ran.out and "iconv" in ran.out and unchanged and not ran.traceback
    return ok, f"unchanged={unchanged}: {ran.out.strip()[:80]}"


@case("MEMORY.md as a directory, then a DM", "the DM is answered; problem shown")
def _memory_dir(work: Path) -> Verdict:
    (work / "data" / "memory" / "pm" / "alice" / "MEMORY.md").mkdir(parents=True)
    ran = run(work, "dm", "pm", "--user", "alice", stdin="你好\n")
    answered = "产品经理小P" in ran.out
    return answered and not ran.traceback and not ran.hung, f"exit {ran.rc}, answered={answered}"


@case("flock and filelock writers on one log", "the second kind is refused")
def _mixed_locks(work: Path) -> Verdict:
    waiting(work)
    ran = run(work, "run", "tech-article", "--room", "r1", env={"STAFFROOM_LOCK": "filelock"})
    return clear_error(ran, "lock")


# -- unclear or missing errors ------------------------------------------------------------

_BAD_SCENARIOS = {
    "NUL in YAML": SCENARIO.replace("title: ", "title: a\x00"),
    "ESC in YAML": SCENARIO.replace("title: ", "title: \x1b[31m"),
    "nesting 10,000 deep": "id: deep\nx: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "humans: []": with_line("humans: [author]", "humans: []"),
    "sop template range(10**9)": with_line(
        "sop: \"{{ best_sop('tech-article') }}\"", 'sop: "{{ range(10**9)|list }}"'
    ),
    "30 MB announcement": with_line("  text: >-", "  text: " + "长" * 30_000_000 + "\n  x: >-"),
    "recent_turns: 1e23": with_line("recent_turns: 12", "recent_turns: 1e23"),
    "10,000-character id": SCENARIO.replace("id: tech-article", "id: " + "a" * 10_000),
    'stop_words: [""]': with_line('stop_words: ["/stop", "结束会议"]', 'stop_words: [""]'),
}

for _name, _text in _BAD_SCENARIOS.items():

    def _bad(work: Path, text: str = _text) -> Verdict:
        path = scenario(work, "bad", text)
        checked = clear_error(run(work, "validate", str(path)), "bad.yaml")
        ran = clear_error(run(work, "run", str(path)))
        return checked[0] and ran[0], f"validate {checked[1][:50]} | run {ran[1][:40]}"

    case(f"scenario: {_name}", "validate and run: clear error")(_bad)


@case("SOP card naming an unknown speaker", "validate reports it (file:line)")
def _unknown_speaker(work: Path) -> Verdict:
    card = _card(work)
    card.write_text(
        card.read_text("utf-8").replace("speaker: designer", "speaker: desginer"), encoding="utf-8"
    )
    return clear_error(run(work, "validate", str(card.parent)), "desginer", "v1.md:")


@case("--script missing / directory / non-UTF-8", "clear error before the room runs")
def _bad_script(work: Path) -> Verdict:
    gbk = work / "gbk.txt"
    gbk.write_bytes("author: 继续".encode("gbk"))
    results = [
        clear_error(run(work, "run", "tech-article", "--room", f"s{i}", "--script", str(p)))
        for i, p in enumerate((work / "nope.txt", work, gbk))
    ]
    ran_anyway = any((work / "data" / "sessions" / f"room:s{i}.jsonl").exists() for i in range(3))
    return all(r[0] for r in results) and not ran_anyway, (
        " | ".join(r[1][:28] for r in results) + f" | ran={ran_anyway}"
    )


@case("script lines 'author:' and whitespace-only", "refused with file:line")
def _empty_lines(work: Path) -> Verdict:
    script = work / "s.txt"
    script.write_text("author:\n   \nauthor: 继续\n", encoding="utf-8")
    ran = run(work, "run", "tech-article", "--room", "r1", "--script", str(script))
    stored = log_kinds(work, "room:r1")["message"]
    verdict = clear_error(ran, "s.txt:1")
    return verdict[0] and stored == 0, f"{verdict[1][:70]} | messages stored={stored}"


@case("bad STAFFROOM_MODEL", "clear error naming the variable")
def _bad_model_env(work: Path) -> Verdict:
    ran = run(work, "run", "tech-article", env={"STAFFROOM_MODEL": "nonsense:::"})
    return clear_error(ran, "STAFFROOM_MODEL")


@case("CLI arguments: --last -5, --room ''", "clear errors")
def _cli_args(work: Path) -> Verdict:
    waiting(work)
    a = clear_error(run(work, "history", "room:r1", "--last", "-5"))
    b = clear_error(run(work, "run", "tech-article", "--room", ""))
    return a[0] and b[0], f"{a[1][:40]} | {b[1][:40]}"


@case("sop show tech-article@x, sop import /nope", "clear errors, no raw repr")
def _sop_cli(work: Path) -> Verdict:
    a = clear_error(run(work, "sop", "show", "tech-article@x"))
    b = clear_error(run(work, "sop", "import", "/nope"), "/nope")
    raw = "ImportReport(" in b[1]
    return a[0] and b[0] and not raw, f"{a[1][:40]} | {b[1][:40]}"


@case("validate: every problem of every file", "all listed, exit 1")
def _validate_all(work: Path) -> Verdict:
    one = scenario(work, "one", with_line("humans: [author]", "humans: []"))
    two = scenario(work, "two", with_line("recent_turns: 12", "recent_turns: -1"))
    ran = run(work, "validate", str(one), str(two))
    ok = ran.rc == 1 and "one.yaml" in ran.text and "two.yaml" in ran.text and not ran.traceback
    return ok, f"exit {ran.rc}"


@case("one broken scenario, other commands", "run other / dm / validate good work")
def _one_bad_file(work: Path) -> Verdict:
    scenario(work, "broken", "id: [unclosed\n")
    a = works(run(work, "run", "tech-article", "--room", "r1"))
    b = works(run(work, "dm", "pm", "--user", "alice", stdin="你好\n"))
    c = works(run(work, "validate", str(work / "proj" / "scenarios" / "tech_article.yaml")))
    return a[0] and b[0] and c[0], f"run {a[1][:20]} | dm {b[1][:20]} | validate {c[1][:20]}"


__all__ = ["ROOT", "TRIALS"]
