"""Group-to-session mapping both ways, and the adapters config file (pure: no server)."""

from __future__ import annotations

from pathlib import Path

import pytest
from adapter_harness import config_file

from framework.errors import InputError
from framework.names import is_name
from framework.surfaces.adapters.feishu import FeishuAdapter, FeishuDoc
from framework.surfaces.adapters.http import AdaptersConfig, AdaptersConfigError, load_adapters
from framework.surfaces.adapters.mapping import GroupDoc, GroupMapping, MappingDoc, Place
from framework.surfaces.adapters.slack import SlackAdapter, SlackDoc


def slack(**groups: GroupDoc) -> SlackAdapter:
    doc = SlackDoc(
        signing_secret="s" * 32,
        bot_token="xoxb-1",
        dm_employee="pm",
        users={"U0ALICE": "alice"},
        groups=dict(groups),
    )
    return SlackAdapter(doc)


def test_room_ids_are_names_and_lead_back_to_their_place() -> None:
    adapter = slack(
        C0GROUP=GroupDoc(scenario="team-chat"),
        C0THREAD=GroupDoc(scenario="team-chat", mode="thread"),
        C0USER=GroupDoc(scenario="team-chat", mode="user"),
        C0OWN=GroupDoc(scenario="team-chat", mode="thread", room="launch-42"),
    )
    said = [
        (Place("C0GROUP", "1.2"), "room:slack-t0team-c0group", Place("C0GROUP")),
        (Place("C0THREAD"), "room:slack-t0team-c0thread-9.1", Place("C0THREAD", "9.1")),
        (Place("C0THREAD", "1.5"), "room:slack-t0team-c0thread-1.5", Place("C0THREAD", "1.5")),
        (Place("C0USER"), "room:slack-t0team-c0user-u0bob", Place("C0USER")),
        (Place("C0OWN", "7.7"), "room:launch-42-7.7", Place("C0OWN", "7.7")),
    ]
    for place, key, back in said:
        target = adapter.mapping.target(place, "U0BOB", scope=("T0TEAM",), root="9.1", author="b")
        assert target is not None and target.key == key
        assert target.room_id is not None and is_name(target.room_id)
        assert target.room_id == target.room_id.lower()
        # A fresh mapping (a restarted server) finds the place from the id alone.
        assert slack(**adapter.doc.groups).mapping.place_of(key) == back, key
    assert adapter.mapping.place_of("room:launch-42") == Place("C0OWN")
    assert adapter.mapping.place_of("room:support-1") is None, "not a Slack room"
    assert adapter.mapping.place_of("room:slack-t0team-c0other") is None, "not a mapped group"


def test_direct_messages_map_to_dms_both_ways() -> None:
    adapter = slack()
    place = Place("D0ALICE", direct=True)
    target = adapter.mapping.target(place, "U0ALICE", author="alice")
    assert target is not None and (target.key, target.employee) == ("dm:alice@pm", "pm")
    assert adapter.mapping.place_of("dm:alice@pm") == place, "the DM channel it came from"
    fresh = slack().mapping
    assert fresh.place_of("dm:alice@pm") == Place("U0ALICE", direct=True), "by the users map"
    assert fresh.place_of("dm:U0CAROL@pm") == Place("U0CAROL", direct=True), "by a Slack id"
    assert fresh.place_of("dm:bob@pm") is None, "a person who is not on Slack"
    assert fresh.place_of("dm:alice@designer") is None, "designer answers no Slack DMs"
    nobody = SlackAdapter(SlackDoc(signing_secret="s" * 32, bot_token="x"))
    assert nobody.mapping.target(place, "U0ALICE", author="alice") is None


def test_unsafe_platform_ids_become_safe_names() -> None:
    mapping = GroupMapping("feishu", MappingDoc(groups={"*": GroupDoc(scenario="s")}))
    target = mapping.target(Place("oc_../../etc:x y"), "ou_1", author="a")
    assert target is not None and target.room_id is not None
    assert is_name(target.room_id) and "/" not in target.room_id and ".." not in target.room_id
    for odd in ["ou_ab/../c", "U 1:2", ".hidden", "..", "x" * 300]:
        assert is_name(mapping.author(odd)), odd


def test_feishu_people_known_by_id_get_direct_replies() -> None:
    doc = FeishuDoc(app_id="cli_1", app_secret="x", verification_token="t", dm_employee="pm")
    adapter = FeishuAdapter(doc)
    assert adapter.mapping.place_of("dm:ou_77@pm") == Place("ou_77", direct=True, id_type="open_id")
    assert adapter.mapping.place_of("dm:on_77@pm") == Place(
        "on_77", direct=True, id_type="union_id"
    )
    assert adapter.mapping.place_of("dm:alice@pm") is None


CONFIG = """\
tokens: []
adapters:
  slack:
    signing_secret_env: SIGNING
    bot_token: xoxb-1
    groups:
      C0LAUNCH: {scenario: team-chat, mode: thread}
"""


def test_config_reads_secrets_from_the_environment(tmp_path: Path) -> None:
    config = config_file(tmp_path, CONFIG, {"SIGNING": "from-env"})
    assert config.slack is not None and config.slack.signing_secret == "from-env"
    assert config.feishu is None and config.ack_within == 2.0
    assert load_adapters(None) == AdaptersConfig(), "no config file: no platforms"
    (tmp_path / "plain.yaml").write_text("tokens: []\n", encoding="utf-8")
    assert load_adapters(tmp_path / "plain.yaml").slack is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (CONFIG, 4, "environment variable SIGNING is not set"),
        (CONFIG.replace("mode: thread", "mode: threads"), 7, "mode"),
        (CONFIG.replace("xoxb-1", "xoxb-1\n    bot_token_env: SIGNING"), 6, "both bot_token"),
        (CONFIG.replace("bot_token: xoxb-1", "bot_tokn: xoxb-1"), 5, "bot_tokn"),
        (CONFIG.replace("C0LAUNCH", "'*'").replace("}", ", room: all}"), 7, "'*' group"),
        ("adapters:\n  feishu: {app_id: cli_1}\n", 2, "app_secret, verification_token"),
    ],
)
def test_config_mistakes_name_file_line_and_fix(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = tmp_path / "server.yaml"
    path.write_text(text, encoding="utf-8")
    environ = {"SIGNING": "s"} if "not set" not in words else {}
    with pytest.raises(AdaptersConfigError) as caught:
        load_adapters(path, environ=environ)
    error = caught.value
    assert isinstance(error, InputError) and error.fix
    assert (error.file, error.line) == (str(path), line), error.render()
    assert words in error.render()
