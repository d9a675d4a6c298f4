"""The database setting: --database, $STAFFROOM_DATABASE_URL and server.yaml's database:."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_in_process import Cli

from framework.errors import InputError
from framework.settings import Settings
from framework.surfaces.server.config import (
    ServerConfigError,
    load_config,
    with_file_database,
)

URL = "postgresql://staff:s3cret-pw@db.internal:5432/staffroom"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_file_names_the_url_by_environment_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "database:\n  url_env: MY_DB\n  pool_size: 4\n  lease_seconds: 5\n")
    config = load_config(path, environ={"MY_DB": URL})
    settings = with_file_database(Settings(data_dir=tmp_path), config)
    assert (settings.database, settings.database_pool_size, settings.lease_seconds) == (URL, 4, 5)
    assert "s3cret" not in repr(config), "the URL holds a password: it is never shown"


def test_the_flag_or_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, f"database:\n  url: {URL}\n  pool_size: 3\n"))
    other = "postgresql://other@127.0.0.1/x"
    settings = with_file_database(Settings(data_dir=tmp_path, database=other), config)
    assert (settings.database, settings.database_pool_size) == (other, 3)


@pytest.mark.parametrize(
    ("text", "environ", "line", "says"),
    [
        ("heartbeat: 5\ndatabase:\n  url_env: NOPE\n", {}, 3, "NOPE is not set"),
        ("database:\n  url: mysql://x@h/d\n", {}, 2, "is not a PostgreSQL URL"),
        ("database:\n  url: postgresql://h/d\n  url_env: X\n", {}, 1, "exactly one of"),
    ],
)
def test_a_bad_database_section_names_its_line_and_the_fix(
    tmp_path: Path, text: str, environ: dict[str, str], line: int, says: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ServerConfigError) as caught:
        load_config(path, environ=environ)
    assert says in caught.value.message
    assert caught.value.line is not None and caught.value.line >= line - 1
    assert caught.value.fix


def test_the_environment_variable_is_checked_and_never_echoed_with_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STAFFROOM_DATABASE_URL", "mysql://root:hunter2-pw@db/x")
    with pytest.raises(InputError) as caught:
        Settings.from_env()
    assert caught.value.field == "STAFFROOM_DATABASE_URL"
    assert "hunter2" not in caught.value.render()
    monkeypatch.setenv("STAFFROOM_DATABASE_URL", URL)
    assert Settings.from_env().database == URL


def test_a_bad_database_flag_is_one_error_naming_the_flag(cli: Cli) -> None:
    result = cli("doctor", "--database", "sqlite:///x.db")
    assert result.code != 0
    said = result.out + result.err
    assert "--database" in said and "postgresql://" in said
