"""``/api/sops`` over real HTTP: the library and its metrics, edits as new versions, and the
review rule the CLI enforces (the same data folder refuses the same publish the same way)."""

from __future__ import annotations

from typing import Any

import httpx
from cli_in_process import Cli, CliResult
from cli_process import staffroom_process
from serve_process import ServeProcess
from viewer_harness import BOB, MANAGER, VIEWER

SOPS = "/api/sops"
V1 = f"{SOPS}/tech-article/versions/1"


def run_room(client: httpx.Client) -> None:
    opened = client.put("/api/rooms/launch-42", json={"scenario": "tech-article"})
    assert opened.status_code == 200, opened.text
    # Queued behind the room's entry: it answers the step that waits for the author.
    posted = client.post(
        "/api/sessions/room:launch-42/messages", json={"text": "方向没问题", "author": "author"}
    )
    assert posted.status_code == 200, posted.text
    assert posted.json()["events"][-1]["kind"] == "outcome"


def edit(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post(f"{SOPS}/tech-article/versions", json={"author": "alice", **body})


def error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()["error"]
    return body


def test_the_library_shows_each_versions_metrics_and_why_it_wins(server: ServeProcess) -> None:
    with server.client(MANAGER) as client:
        run_room(client)
        (sop,) = [s for s in client.get(SOPS).json()["sops"] if s["id"] == "tech-article"]
        assert (sop["id"], sop["best"], sop["trial"]) == ("tech-article", 1, None)
        (v1,) = sop["versions"]
        assert v1["status"] == "published"
        metrics = v1["metrics"]
        assert (metrics["references"], metrics["runs"], metrics["successes"]) == (1, 1, 1)
        assert metrics["success_rate"] == 1.0
        assert metrics["hit_rate_by_user"] == {"author": 1.0}
        assert (metrics["corrections"], metrics["replaced"], metrics["lacking_evidence"]) == (
            0,
            0,
            0,
        )
        assert v1["score"] is not None and v1["ineligible"] is None

        shown = client.get(V1).json()
        assert [s["speakers"] for s in shown["steps"]] == [
            ["pm"],
            ["engineer"],
            ["designer"],
            ["pm"],
        ]
        assert shown["steps"][1]["waits_for_input"] is True
        assert shown["card"].startswith("---\nid: tech-article\nversion: 1\n")
        assert shown["text"].startswith("SOP tech-article@1")
        assert [e["by"] for e in shown["change_log"]] == ["admin"]

        explained = client.get(f"{SOPS}/tech-article/explain").json()
        assert explained["winner"] == "tech-article@1"
        assert explained["lines"][0].startswith("tech-article@1 wins")
        terms = {t["name"] for t in explained["ranked"][0]["terms"]}
        assert terms == {"success", "corrections", "usage", "recency", "sink"}


def test_publishing_needs_the_reviewers_the_cli_needs(server: ServeProcess) -> None:
    with server.client(MANAGER) as client:
        steps = client.get(V1).json()["steps"]
        new_steps = [
            {"speaker": s["speakers"][0], "do": s["do"], "waits_for_input": s["waits_for_input"]}
            for s in steps
        ]
        new_steps.insert(3, {"speaker": "engineer", "do": "事实核查：逐条核对数据出处"})
        made = edit(client, steps=new_steps, note="add a fact check", reviewers=["bob"])
        assert made.status_code == 201, made.text
        v2 = made.json()
        assert (v2["ref"], v2["status"], v2["awaiting"]) == ("tech-article@2", "draft", ["bob"])
        assert v2["change_log"][-1] == {
            "version": 2,
            "why": "add a fact check",
            "by": "alice",
            "source": "edit of tech-article@1",
        }
        diff = client.get(f"{SOPS}/tech-article/versions/2/diff").json()
        assert diff["against"] == "tech-article@1"  # the best version
        assert "+ 4. engineer: 事实核查：逐条核对数据出处" in diff["steps"]
        assert [e["why"] for e in diff["change_log"]] == ["add a fact check"]

        refused = client.post(f"{SOPS}/tech-article/versions/2/publish", json={})
        assert refused.status_code == 409
        assert error(refused)["type"] == "approval_needed"
        assert error(refused)["message"] == "SOP tech-article@2 needs approval from: bob"
        assert "--by bob" in error(refused)["fix"]
        assert refused.json()["awaiting"] == ["bob"]

        approved = client.post(f"{SOPS}/tech-article/versions/2/approve", json={"reviewer": "bob"})
        assert approved.json()["awaiting"] == []
        more = client.post(f"{SOPS}/tech-article/versions/2/publish", json={"require": ["dana"]})
        assert more.status_code == 409 and more.json()["awaiting"] == ["dana"]
        client.post(f"{SOPS}/tech-article/versions/2/approve", json={"reviewer": "dana"})
        published = client.post(
            f"{SOPS}/tech-article/versions/2/publish", json={"require": ["dana"]}
        )
        assert published.status_code == 200, published.text
        assert (published.json()["status"], published.json()["trial"]) == ("published", True)

        # A draft that names nobody needs one approval by anyone, as `sop publish` says.
        bare = edit(client, base=1, goal="技术文章从立题到发布", note="wider goal")
        assert bare.status_code == 201 and bare.json()["reviewers"] == []
        nobody = client.post(f"{SOPS}/tech-article/versions/3/publish", json={})
        assert nobody.status_code == 409
        assert "nobody has approved" in error(nobody)["message"]

    server.stop()  # the CLI on the same data folder refuses the same publish in the same words
    command = ["sop", "--data-dir", str(server.data), "publish", "tech-article@3"]
    cli = staffroom_process(*command)
    assert cli.code == 2
    assert error(nobody)["message"] in cli.err + cli.out


def test_edits_and_lookups_that_cannot_work_say_what_to_fix(server: ServeProcess) -> None:
    with server.client(MANAGER) as client:
        card = client.get(V1).json()["card"]
        other = edit(client, card=card.replace("id: tech-article", "id: other"), note="x")
        assert other.status_code == 400 and error(other)["field"] == "id"
        same = edit(client, card=card, note="no change")
        assert same.status_code == 400
        assert (
            error(same)["message"] == "the edit is the same procedure as tech-article@1 (published)"
        )
        broken = edit(client, card="---\nsteps: 3\n---\n", note="x")
        assert broken.status_code == 400 and error(broken)["field"] == "scope"
        assert error(broken)["message"].startswith("card line 2: missing field 'scope'")
        nothing = edit(client, note="x")
        assert nothing.status_code == 400 and error(nothing)["field"] == "steps"
        no_note = client.post(f"{SOPS}/tech-article/versions", json={"author": "a", "card": card})
        assert no_note.status_code == 422 and error(no_note)["field"] == "note"

        unknown = client.get(f"{SOPS}/nope/versions/1")
        assert unknown.status_code == 404 and "tech-article" in error(unknown)["fix"]
        missing = client.get(f"{SOPS}/tech-article/versions/9")
        assert (
            missing.status_code == 404 and error(missing)["fix"] == "versions of 'tech-article': 1"
        )
        assert client.get(f"{SOPS}/tech-article/versions/0").status_code == 422
        extra = client.post(f"{V1}/approve", json={"reviewer": "bob", "role": "boss"})
        assert extra.status_code == 422
        blank = client.post(f"{V1}/deprecate", json={"reason": "  "})
        assert blank.status_code == 400 and error(blank)["field"] == "reason"
        assert client.get(V1).json()["status"] == "published"  # nothing changed


def test_tokens_need_sop_read_to_look_and_sop_write_to_change(server: ServeProcess) -> None:
    with server.client() as anonymous:
        assert anonymous.get(SOPS).status_code == 401
    with server.client(VIEWER) as viewer:
        assert viewer.get(SOPS).status_code == 200
        refused = viewer.post(f"{V1}/deprecate", json={"reason": "old"})
        assert refused.status_code == 403 and error(refused)["field"] == "operations"
        assert viewer.get(V1).json()["status"] == "published"


def test_the_page_and_its_assets_come_from_the_package_only(server: ServeProcess) -> None:
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        script = client.get("/viewer/viewer.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert "textContent" in script.text
        (server.data / "evil.js").write_text("alert(1)", encoding="utf-8")
        for path in ["/viewer/evil.js", "/viewer/..%2F..%2Fapp.py", "/viewer/index.html"]:
            response = client.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"]["type"] == "not_found"


def test_an_edit_cannot_shed_reviewers_move_the_scope_or_carry_approvals(
    server: ServeProcess,
) -> None:
    with server.client(MANAGER) as client:
        steps = client.get(V1).json()["steps"]
        new_steps = [{"speaker": s["speakers"][0], "do": s["do"]} for s in steps]
        new_steps.append({"speaker": "pm", "do": "归档：把定稿放进知识库"})
        v2 = edit(client, steps=new_steps, note="archive", reviewers=["bob", " carol "]).json()
        assert v2["awaiting"] == ["bob", "carol"], "names are stripped"
        # An edit of that draft still awaits bob and carol (and whoever it adds).
        v3 = edit(client, base=2, body="notes", note="notes", reviewers=["dave"]).json()
        assert v3["awaiting"] == ["bob", "carol", "dave"]

        card = client.get(f"{SOPS}/tech-article/versions/3").json()["card"]
        moved = edit(client, card=card.replace("scope: scenario:tech-article", "scope: global"),
                     note="move it")  # fmt: skip
        assert moved.status_code == 400 and error(moved)["field"] == "scope"
        forged = "- reviewer: bob\n  at: 2026-01-01T00:00:00Z\n"
        planted = edit(client, base=3, body=f"## Approvals\n{forged}\n## Approvals\n", note="x")
        assert planted.status_code == 400 and error(planted)["field"] == "body"


def test_a_token_approves_only_as_the_people_it_may_act_for(server: ServeProcess) -> None:
    with server.client(MANAGER) as client:
        steps = client.get(V1).json()["steps"]
        new_steps = [{"speaker": s["speakers"][0], "do": s["do"]} for s in steps][:-1]
        edit(client, steps=new_steps, note="shorter", reviewers=["alice", "bob"])
    with server.client(BOB) as bob:
        as_alice = bob.post(f"{SOPS}/tech-article/versions/2/approve", json={"reviewer": "alice"})
        assert as_alice.status_code == 403 and "alice" in error(as_alice)["message"]
        as_bob = bob.post(f"{SOPS}/tech-article/versions/2/approve", json={"reviewer": "bob"})
        assert as_bob.status_code == 200 and as_bob.json()["awaiting"] == ["alice"]
        refused = bob.post(f"{SOPS}/tech-article/versions/2/publish", json={})
        assert refused.status_code == 409 and refused.json()["awaiting"] == ["alice"]


def test_the_cli_and_the_server_refuse_the_same_edit_in_the_same_words(
    server: ServeProcess, cli: Cli
) -> None:
    with server.client(MANAGER) as client:
        made = edit(client, body="notes", note="notes", reviewers=["bob"])
        assert made.status_code == 201, made.text
        card = client.get(f"{SOPS}/tech-article/versions/2").json()["card"]
        moved = card.replace("scope: scenario:tech-article", "scope: global")
        refused = edit(client, card=moved, note="move it")
        assert refused.status_code == 400 and error(refused)["field"] == "scope"

    server.stop()  # the CLI on the same data folder: one rule, so the same refusal
    card_file = server.data.parent / "moved.md"
    card_file.write_text(moved, encoding="utf-8")

    def sop(*args: str) -> CliResult:
        return cli("sop", *args, data=server.data)

    said_cli = sop(
        "edit", "tech-article", "--card", str(card_file), "--note", "move it", "--by", "al"
    )
    assert said_cli.code == 2 and "Traceback" not in said_cli.err
    assert error(refused)["message"] in " ".join(said_cli.err.split())
    assert error(refused)["fix"] in " ".join(said_cli.err.split())
    # What the CLI saves follows the same rule as the server: the draft's reviewers are kept.
    card_file.write_text(card.replace("notes", "better notes"), encoding="utf-8")
    saved = sop("edit", "tech-article", "--card", str(card_file), "--base", "2",
                "--note", "clearer", "--by", "al", "--reviewer", "dave")  # fmt: skip
    assert saved.code == 0, saved.err
    said = " ".join(saved.out.split())
    assert "tech-article@3: saved as a draft awaiting review" in said
    assert "awaiting approval from: bob, dave" in said
    # An approval's name is trimmed by the CLI as by the server (one rule, sop.drafting).
    assert sop("approve", "tech-article@3", "--by", " dave ").code == 0
    assert "awaiting approval from: bob\n" in sop("show", "tech-article@3").out


def test_an_empty_edit_and_a_bad_name_are_refused_on_both_surfaces_each_in_its_terms(
    server: ServeProcess, cli: Cli
) -> None:
    too_long = "n" * 201  # a name is a label: at most 200 characters (specs/limits.py)
    with server.client(MANAGER) as client:
        nothing = edit(client, note="x")
        assert nothing.status_code == 400
        assert "`card`" in error(nothing)["fix"] and "`steps`" in error(nothing)["fix"]
        for name in ("", too_long):
            refused = client.post(f"{V1}/approve", json={"reviewer": name})
            assert refused.status_code == 422 and error(refused)["field"] == "reviewer"

    server.stop()  # the CLI on the same data folder: the same rules, its own options named

    def sop(*args: str) -> CliResult:
        return cli("sop", *args, data=server.data)

    said = sop("edit", "tech-article", "--note", "x", "--by", "al")
    flat = " ".join(said.err.split())
    assert said.code == 2 and "Traceback" not in said.err
    assert error(nothing)["message"] in flat  # the same refusal ...
    assert "--card FILE" in flat and "--goal TEXT" in flat  # ... its fix in the CLI's terms
    assert "`steps`" not in flat and "`body`" not in flat
    commands = [
        ["approve", "tech-article@1"],
        ["publish", "tech-article@1"],
        ["deprecate", "tech-article@1", "--why", "old"],
        ["edit", "tech-article", "--note", "x", "--goal", "g"],
    ]
    for command in commands:
        for name, why in (
            ("  ", "the name is empty"),
            (too_long, "the name is 201 characters long"),
        ):
            said = sop(*command, "--by", name)
            flat = " ".join(said.err.split())
            assert said.code == 2 and "Traceback" not in said.err, said.err
            assert f"--by: {why}" in flat and "fix: give --by NAME" in flat, flat
    for option, command in (("--require", commands[1]), ("--reviewer", commands[3])):
        said = sop(*command, option, " ", "--by", "al")
        assert said.code == 2 and f"{option}: the name is empty" in " ".join(said.err.split())
    shown = sop("show", "tech-article@1")
    assert "published" in shown.out and "tech-article@2" not in sop("list").out  # nothing saved
