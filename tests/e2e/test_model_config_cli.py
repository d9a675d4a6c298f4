"""Choosing a model as a person does: ``--model``, ``$STAFFROOM_MODEL``, ``models.yaml``,
``staffroom init``; and what ``run`` does when the model is unreachable."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cli_in_process import Cli
from cli_process import staffroom_process
from paths import ROOT
from stub_openai import StubOpenAI

from framework import Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec
from framework.specs.models_file import parse_model_option

SCRIPT = ROOT / "scenarios" / "tech_article.script.txt"


def test_a_bad_model_setting_is_one_clear_line_not_a_traceback(cli: Cli, tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    bad_env = cli("run", "tech-article", "--data-dir", data, env={"STAFFROOM_MODEL": "gpt4"})
    assert bad_env.code == 2
    assert "Traceback" not in bad_env.err
    assert "unknown model 'gpt4'" in bad_env.err and "models.yaml" in bad_env.err
    bad_flag = cli("dm", "pm", "--data-dir", data, "--model", "{provider: foo}")
    assert bad_flag.code == 2 and "Traceback" not in bad_flag.err
    assert "--model" in bad_flag.err and "provider" in bad_flag.err


def test_unreachable_model_exits_1_keeps_the_script_and_retries_on_rerun(
    cli: Cli,
    tmp_path: Path,
) -> None:
    data = str(tmp_path / "d")
    down = "openai:gemma@http://127.0.0.1:9/v1"
    args = ("run", "tech-article", "--room", "r1", "--data-dir", data, "--script", str(SCRIPT))
    failed = cli(*args, "--model", down)
    assert failed.code == 1, failed.out + failed.err
    assert "http://127.0.0.1:9/v1" in failed.out
    assert "check that the server is running" in failed.out
    log = tmp_path / "d" / "sessions" / "room:r1.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    # No script line was spent acknowledging the error.
    assert not [e for e in events if e["kind"] == "message" and e["meta"].get("human")]
    with StubOpenAI(default_text="提纲与评估") as stub:
        fixed = cli(*args, "--model", f"openai:gemma@{stub.base_url}")
    assert fixed.code == 0, fixed.out + fixed.err
    assert "ended: sop_complete" in fixed.out
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    steps = [e["meta"]["step"] for e in events if e["kind"] == "message" and "step" in e["meta"]]
    assert steps == [1, 2, 3, 4]  # step 1 retried once, then the script drove the rest


def test_dm_on_a_down_server_exits_1(cli: Cli, tmp_path: Path) -> None:
    down = cli(
        "dm",
        "pm",
        "--user",
        "alice",
        "--data-dir",
        str(tmp_path),
        env={"STAFFROOM_MODEL": "openai:m@http://127.0.0.1:9/v1"},
    )
    assert down.code == 0  # no line posted, nothing failed
    piped = cli(
        "dm",
        "pm",
        "--user",
        "alice",
        "--data-dir",
        str(tmp_path),
        "--model",
        "openai:m@http://127.0.0.1:9/v1",
        stdin="你好\n",
    )
    assert piped.code == 1 and "127.0.0.1:9" in piped.out


def test_init_scaffolds_a_project_that_validates_and_runs(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    made = cli("init", str(project))
    assert made.code == 0, made.err
    assert (project / "models.yaml").is_file()
    checked = cli("validate", str(project))
    assert checked.code == 0, checked.out
    script = project / "scenarios" / "note.script.txt"
    ran = cli(
        "run", "note", "--project", str(project), "--data-dir", str(project / ".d"),
        "--script", str(script),
    )  # fmt: skip
    assert ran.code == 0, ran.out + ran.err
    assert "ended: sop_complete" in ran.out and "success" in ran.out
    again = cli("init", str(project))
    assert again.code == 2 and "not empty" in again.err


def test_init_with_a_model_writes_it_to_models_yaml(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "p"
    url = "http://127.0.0.1:8080/v1"
    spec = f"{{provider: openai, name: gemma, base_url: '{url}', context_window: 4096}}"
    assert cli("init", str(project), "--model", spec).code == 0
    text = (project / "models.yaml").read_text(encoding="utf-8")
    assert "base_url: http://127.0.0.1:8080/v1" in text and "context_window: 4096" in text


def test_validate_names_the_card_line_of_an_unknown_model_name(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert cli("init", str(project)).code == 0
    card = project / "agents" / "editor.yaml"
    card.write_text(card.read_text().replace("model: default", "model: defualt"))
    checked = cli("validate", str(project))
    assert checked.code == 1
    assert f"{card}:6" in checked.out and "did you mean 'default'" in checked.out


async def test_precedence_flag_then_scenario_then_card_then_default(tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert staffroom_process("init", str(project)).code == 0
    (project / "models.yaml").write_text(
        "default: {provider: scripted, name: from-models-yaml}\n"
        "big: {provider: scripted, name: big, context_window: 100000}\n",
        encoding="utf-8",
    )
    seen: dict[str, str] = {}

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        seen[who] = spec.label
        return ScriptedChatModel(replies=["ok"] * 5)

    async def labels(settings: Settings, scenario_model: str | None) -> dict[str, str]:
        path = project / "scenarios" / "note.yaml"
        text = path.read_text(encoding="utf-8").split("settings:")[0]
        text += "settings:\n  max_turns: 10\n"
        if scenario_model:
            text += f"  model: {scenario_model}\n"
        path.write_text(text, encoding="utf-8")
        async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
            room = await staff.room("p1", path)
            return room.model_labels

    base = Settings(data_dir=tmp_path / "d", project_dir=project, allow_network=False)
    assert (await labels(base, None))["writer"] == "scripted:from-models-yaml"  # the card's name
    assert (await labels(base, "big"))["writer"] == "scripted:big"  # scenario over card
    flag = base.model_copy(
        update={"model_override": parse_model_option("scripted:flag", where="--model")}
    )
    assert (await labels(flag, "big"))["writer"] == "scripted:flag"  # the flag over all
    card = project / "agents" / "writer.yaml"
    card.write_text(card.read_text().replace("model: default", ""), encoding="utf-8")
    assert (await labels(base, None))["writer"] == "simulated"  # nothing named: the default


def test_a_bad_models_yaml_or_sop_card_is_an_error_that_exits_not_a_hang(
    cli: Cli, tmp_path: Path
) -> None:
    # Both used to leave a database worker thread running, so the process never exited.
    project = tmp_path / "p"
    assert cli("init", str(project)).code == 0
    models = project / "models.yaml"
    models.write_text("default:\n  provider: openai\n  context_window: -5\n", encoding="utf-8")
    data = str(tmp_path / "d")
    bad = cli("run", "note", "--project", str(project), "--data-dir", data)
    assert bad.code == 2 and f"{models}:3 default.context_window" in bad.err
    models.write_text("default: {provider: simulated}\n", encoding="utf-8")
    card = project / "sop_library" / "note" / "v1.md"
    card.write_text(card.read_text().replace("    do: Draft", "    dox: Draft"), encoding="utf-8")
    bad_card = cli("run", "note", "--project", str(project), "--data-dir", data)
    assert bad_card.code == 2 and "did you mean 'do'" in bad_card.err


def test_bad_options_are_one_clear_line(cli: Cli, tmp_path: Path) -> None:
    for bad in (
        "{provider: openai, name: x, options: {max_tokens: abc}}",
        "{provider: openai, name: x, options: {base_url: 'http://127.0.0.1:1/v1'}}",
    ):
        done = cli("dm", "pm", "--data-dir", str(tmp_path), "--model", bad)
        assert done.code == 2 and "Traceback" not in done.err, done.err
        assert "options" in done.err


def test_a_resumed_run_does_not_say_the_script_again(cli: Cli, tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    args = ("run", "tech-article", "--room", "r2", "--data-dir", data, "--script", str(SCRIPT))
    with StubOpenAI() as stub:
        stub.reply("提纲").reply("初稿").error(400, "model not loaded")  # step 3 fails
        failed = cli(*args, "--model", f"openai:gemma@{stub.base_url}")
        assert failed.code == 1, failed.out + failed.err
        fixed = cli(*args, "--model", f"openai:gemma@{stub.base_url}")
    assert fixed.code == 0, fixed.out + fixed.err
    log = tmp_path / "d" / "sessions" / "room:r2.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    said = [e["content"] for e in events if e["kind"] == "message" and e["meta"].get("human")]
    assert len(said) == 1  # the author's one line, posted once


def test_a_damaged_database_is_a_clear_error_not_a_hang(cli: Cli, tmp_path: Path) -> None:
    for name in ("checkpoints.sqlite", "sops.sqlite"):
        data = tmp_path / name.split(".")[0]
        data.mkdir()
        (data / name).write_bytes(b"\x13garbage, not sqlite\x00" * 8)
        done = cli("run", "tech-article", "--data-dir", str(data))
        assert done.code == 2, done.err
        assert name in done.err and "Traceback" not in done.err


def test_a_megabyte_script_line_is_shown_cut_and_stored_whole(cli: Cli, tmp_path: Path) -> None:
    line = "很" * 1_000_000
    script = tmp_path / "long.txt"
    script.write_text(f"author: {line}\n", encoding="utf-8")
    data = tmp_path / "d"
    done = cli("run", "tech-article", "--room", "long", "--data-dir", str(data),
                     "--script", str(script))  # fmt: skip
    assert done.code == 0, done.err
    # The pointer carries the data folder given: it runs as printed.
    pointer = f"998000 more characters: staffroom history --data-dir {data} room:long --json"
    assert pointer in done.out
    log = (data / "sessions" / "room:long.jsonl").read_text(encoding="utf-8")
    assert line in log  # nothing lost: the history keeps the whole message


def test_cli_arguments_are_checked(cli: Cli, tmp_path: Path) -> None:
    data = str(tmp_path)
    empty_room = cli("run", "tech-article", "--room", "", "--data-dir", data)
    assert empty_room.code == 2 and "invalid chat id ''" in empty_room.err
    negative = cli("history", "room:x", "--last", "-5", "--data-dir", data)
    assert negative.code == 2 and "--last" in negative.err


def test_a_new_project_has_the_readmes_local_model(cli: Cli, tmp_path: Path) -> None:
    # The README's walkthrough says "add --model local": it must name a model in a new
    # project too, with the small server's window, cap and folded instructions.
    project = tmp_path / "p"
    assert cli("init", str(project)).code == 0
    local = yaml.safe_load((project / "models.yaml").read_text(encoding="utf-8"))["local"]
    assert local["base_url"] == "http://127.0.0.1:8080/v1"
    assert (local["context_window"], local["max_output_tokens"]) == (4096, 256)
    assert local["system_role"] == "fold"
    data = str(tmp_path / "data")
    ran = cli(
        "run", "note", "--project", str(project), "--data-dir", data, "--model", "local",
        "--message", "x",
    )  # fmt: skip
    assert "unknown model" not in ran.out + ran.err
    assert (
        "at http://127.0.0.1:8080/v1 · window 4096 tokens · answers ≤ 256 · instructions folded"
        in ran.out
    )
