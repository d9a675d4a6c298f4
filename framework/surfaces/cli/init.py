"""``staffroom init DIR``: a project that validates and runs at once.

Two employees, a scenario, its SOP card, a demo script, ``models.yaml``, whose ``default``
model every card names, so pointing the whole project at another model is one line, and
``staffroom.yaml`` (the project's label language). English by default; ``--language zh``
writes every file in Chinese.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import yaml
from rich.console import Console
from rich.markup import escape

from framework.errors import InputError
from framework.phrases import Language, Phrase, language_or_default
from framework.specs.model_spec import ModelSpec
from framework.specs.project_file import PROJECT_FILE

_CARDS = {
    "writer": """id: writer
display_name: Writer
role: writer
persona: >-
  You write short, clear drafts. You put what you write into the workspace, not the chat.
model: default        # a name from models.yaml
tools: [write_file, read_file]
language: en
""",
    "editor": """id: editor
display_name: Editor
role: editor
persona: >-
  You review drafts: what works, what to change, in three bullet points at most.
model: default
tools: [read_file]
language: en
""",
}

_CARDS_ZH = {
    "writer": """id: writer
display_name: 写手
role: writer
persona: >-
  你负责写简短、清楚的初稿。写好的内容放进工作区，而不是贴在聊天里。
model: default        # models.yaml 里的名字
tools: [write_file, read_file]
language: zh
""",
    "editor": """id: editor
display_name: 编辑
role: editor
persona: >-
  你负责审读初稿：哪里写得好、哪里要改，最多三条。
model: default
tools: [read_file]
language: zh
""",
}

_SCENARIO = """id: {id}
title: A short note, drafted and reviewed
language: en          # of what the framework writes here: en or zh
participants: [writer, editor]
humans: [author]
announcement:
  text: >-
    Goal: a one-page note on the author's topic. The writer drafts, the editor reviews,
    the author decides. Say "/stop" to end.
  sop: "{{{{ best_sop('{id}') }}}}"
settings:
  max_turns: 10
  stop_words: ["/stop"]
"""

_SCENARIO_ZH = """id: {id}
title: 一页短文：起草与审读
language: zh          # 框架在这里所写文字的语言：en 或 zh
participants: [writer, editor]
humans: [author]
announcement:
  text: >-
    目标：围绕作者的主题写一页短文。写手起草，编辑审读，作者拍板。发送"/stop"结束。
  sop: "{{{{ best_sop('{id}') }}}}"
settings:
  max_turns: 10
  stop_words: ["/stop"]
"""

_SOP = """---
id: {id}
version: 1
scope: scenario:{id}
goal: A one-page note from topic to reviewed draft
status: published
steps:
  - speaker: writer
    do: Draft the note and write it to note.md
    tools: [write_file]
    produces: [note.md]
    waits_for_input: true
  - speaker: editor
    do: Review note.md and list what to change
    tools: [read_file]
change_log:
  - version: 1
    why: first version
    by: staffroom init
---
Edit this procedure by adding v2.md next to it; versions never change once published.
"""

_SOP_ZH = """---
id: {id}
version: 1
scope: scenario:{id}
goal: 一页短文从主题到审读定稿
status: published
steps:
  - speaker: writer
    do: 起草短文，写入 note.md
    tools: [write_file]
    produces: [note.md]
    waits_for_input: true
  - speaker: editor
    do: 审读 note.md，列出要改的地方
    tools: [read_file]
change_log:
  - version: 1
    why: 初版
    by: staffroom init
---
修改流程请在旁边新建 v2.md；已发布的版本不再改动。
"""

_SCRIPT = """# what the author says when the room waits (one line each)
author: Looks good, go on.
"""

_SCRIPT_ZH = """# 房间等待时作者说的话（每行一句）
author: 可以，继续。
"""

_PROJECT = """# Project settings. language: the CLI's and the viewer's labels (en or zh);
# $STAFFROOM_LANGUAGE wins over it. Rooms write in their scenario's language.
language: {language}
"""

RUN_IT = Phrase(
    en="run it:   {command}",
    zh="运行：{command}",
)
CHECK_IT = Phrase(
    en="check it: {command}",
    zh="检查：{command}",
)
FIRST_MESSAGE = Phrase(
    en="Topic: why our on-call rotation moves to weekly shifts",
    zh="主题：值班为什么改成每周轮换",
)
"""The room's first message in the run hint: step 1 (the writer's draft) works on it. Written
in the project's language; no quote, ``$`` or backslash, so it stands in double quotes."""

_TEXTS: dict[Language, tuple[dict[str, str], str, str, str]] = {
    "en": (_CARDS, _SCENARIO, _SOP, _SCRIPT),
    "zh": (_CARDS_ZH, _SCENARIO_ZH, _SOP_ZH, _SCRIPT_ZH),
}


def _models_yaml(spec: ModelSpec) -> str:
    fields = spec.model_dump(exclude_defaults=True, exclude={"named"})
    fields.setdefault("provider", spec.provider)
    header = (
        "# Named models: cards say `model: default`. Change this one entry to point the whole\n"
        "# project at another model (see README: Real models). Fields: provider, name,\n"
        "# base_url, api_key_env, context_window, max_output_tokens, system_role, options.\n"
    )
    return (
        header
        + yaml.safe_dump({"default": fields}, sort_keys=False, allow_unicode=True)
        + _LOCAL_MODEL
    )


# `--model local` (the README's recipe) works in a new project as in this repository: a small
# local server needs its real window, a cap on answers and no system role, or its first
# answers overflow the window or lose the instructions.
_LOCAL_MODEL = """
# `--model local`: llama.cpp's OpenAI-compatible server with Gemma 3 270M on this machine,
# started as in the README's "Real models" recipe (no API key on 127.0.0.1).
local:
  provider: openai
  name: gemma-3-270m
  base_url: http://127.0.0.1:8080/v1
  context_window: 4096      # the server's --n_ctx
  max_output_tokens: 256    # cap on one answer
  system_role: fold         # Gemma's chat template has no system role
"""


def scaffold(
    target: Path, spec: ModelSpec, scenario_id: str = "note", language: Language = "en"
) -> list[Path]:
    """Write a new project into ``target`` (which must be empty or missing), its cards,
    scenario, SOP and script written in ``language``; the files written."""
    if spec.named is not None:
        raise InputError(
            f"--model '{spec.named}' names a model of another project's models.yaml",
            field="model",
            fix="give the model itself, e.g. openai:NAME@http://127.0.0.1:8080/v1",
        )
    if target.exists() and any(target.iterdir()):
        raise InputError(
            f"{target} is not empty",
            field="DIR",
            fix="choose a new folder; init never overwrites files",
        )
    cards, scenario, sop, script = _TEXTS[language]
    files = {
        Path(PROJECT_FILE): _PROJECT.format(language=language),
        Path("models.yaml"): _models_yaml(spec),
        Path("scenarios") / f"{scenario_id}.yaml": scenario.format(id=scenario_id),
        Path("scenarios") / f"{scenario_id}.script.txt": script,
        Path("sop_library") / scenario_id / "v1.md": sop.format(id=scenario_id),
        **{Path("agents") / f"{name}.yaml": text for name, text in cards.items()},
    }
    written = []
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def init_project(target: Path, spec: ModelSpec, console: Console, language: Language = "en") -> int:
    """``staffroom init``: scaffold, then say how to run it."""
    written = scaffold(target, spec, language=language)
    for path in written:
        console.print(f"[green]+[/] {escape(str(path))}")
    # Labels as the new project will have them, unless $STAFFROOM_LANGUAGE says otherwise.
    labels = language_or_default(os.environ.get("STAFFROOM_LANGUAGE"), language)
    folders = ["--project", str(target), "--data-dir", str(target / ".staffroom")]
    script = ["--script", str(target / "scenarios" / "note.script.txt")]
    message = f'--message "{FIRST_MESSAGE(language)}"'
    run = f"{shlex.join(['staffroom', 'run', 'note', *folders])} {message} {shlex.join(script)}"
    console.print()
    console.print(escape(RUN_IT(labels, command=run)), highlight=False)
    console.print(
        escape(CHECK_IT(labels, command=shlex.join(["staffroom", "validate", str(target)])))
    )
    return 0
