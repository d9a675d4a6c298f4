"""``staffroom init DIR``: a project that validates and runs at once.

Two employees, a scenario, its SOP card, a demo script and ``models.yaml``, whose ``default``
model every card names, so pointing the whole project at another model is one line.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from rich.console import Console
from rich.markup import escape

from framework.errors import InputError
from framework.specs.model_spec import ModelSpec

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

_SCENARIO = """id: {id}
title: A short note, drafted and reviewed
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

_SCRIPT = """# what the author says when the room waits (one line each)
author: Looks good, go on.
"""


def _models_yaml(spec: ModelSpec) -> str:
    fields = spec.model_dump(exclude_defaults=True, exclude={"named"})
    fields.setdefault("provider", spec.provider)
    header = (
        "# Named models: cards say `model: default`. Change this one entry to point the whole\n"
        "# project at another model (see README: Real models). Fields: provider, name,\n"
        "# base_url, api_key_env, context_window, max_output_tokens, system_role, options.\n"
    )
    return header + yaml.safe_dump({"default": fields}, sort_keys=False, allow_unicode=True)


def scaffold(target: Path, spec: ModelSpec, scenario_id: str = "note") -> list[Path]:
    """Write a new project into ``target`` (which must be empty or missing); the files written."""
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
    files = {
        Path("models.yaml"): _models_yaml(spec),
        Path("scenarios") / f"{scenario_id}.yaml": _SCENARIO.format(id=scenario_id),
        Path("scenarios") / f"{scenario_id}.script.txt": _SCRIPT,
        Path("sop_library") / scenario_id / "v1.md": _SOP.format(id=scenario_id),
        **{Path("agents") / f"{name}.yaml": text for name, text in _CARDS.items()},
    }
    written = []
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def init_project(target: Path, spec: ModelSpec, console: Console) -> int:
    """``staffroom init``: scaffold, then say how to run it."""
    written = scaffold(target, spec)
    for path in written:
        console.print(f"[green]+[/] {escape(str(path))}")
    data = target / ".staffroom"
    console.print(
        f"\nrun it:  staffroom run note --project {target} --data-dir {data} "
        f"--script {target / 'scenarios' / 'note.script.txt'}\n"
        f"check it: staffroom validate {target}"
    )
    return 0
