"""Who ships: the machine id kept once in the state directory, the project from the origin URL,
the DSN from the environment or the config, and the retry delays of the daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from team_helpers import team_config

from indexer.paths import StatePaths
from summarizer.daemon.team_job import retry_delay
from summarizer.team.errors import TeamError
from summarizer.team.identity import machine_id, normalize_remote, project_name, settings


@pytest.mark.parametrize(
    ("url", "project"),
    [
        ("git@github.com:Acme/Shop.git", "github.com/acme/shop"),
        ("https://github.com/acme/shop", "github.com/acme/shop"),
        ("https://alice:s3cr3t@github.com/acme/shop.git/", "github.com/acme/shop"),
        ("ssh://git@gitlab.example.com:2222/group/sub/app.git", "gitlab.example.com/group/sub/app"),
        ("git://example.org/app.git", "example.org/app"),
        ("/srv/git/app.git", "srv/git/app"),
        ("file:///srv/git/app.git", "srv/git/app"),
    ],
)
def test_origin_urls_of_one_repository_name_one_project(url: str, project: str) -> None:
    assert normalize_remote(url) == project


def test_the_project_is_the_origin_else_the_folder(tmp_path: Path) -> None:
    repo = tmp_path / "shop-clone"
    repo.mkdir()
    paths = StatePaths(repo / ".ctxd")
    assert project_name(paths, team_config(project="")) == "shop-clone"  # not a repository
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:Acme/Shop.git"],
        check=True,
    )
    assert project_name(paths, team_config(project="")) == "github.com/acme/shop"
    assert project_name(paths, team_config(project="billing")) == "billing"


def test_the_environment_wins_and_empty_turns_shipping_off() -> None:
    config = team_config(dsn="postgresql://db/ctxd")
    assert settings(config, {}).dsn == "postgresql://db/ctxd"
    assert settings(config, {"CTXD_TEAM_DSN": "postgresql://other/x"}).dsn == "postgresql://other/x"
    assert not settings(config, {"CTXD_TEAM_DSN": ""}).enabled
    assert not settings(team_config(), {}).enabled


def test_the_machine_id_is_made_once_even_by_racing_processes(tmp_path: Path) -> None:
    code = (
        "import sys; from indexer.paths import StatePaths; "
        "from summarizer.team.identity import machine_id; "
        "print(machine_id(StatePaths(__import__('pathlib').Path(sys.argv[1]))))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "s")],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and len(ids.pop()) == 32
    paths = StatePaths(tmp_path / "s")
    assert machine_id(paths) == (paths.root / "team" / "machine_id").read_text().strip()
    assert (paths.root / "team" / "machine_id").stat().st_mode & 0o777 == 0o600
    assert not [p for p in (paths.root / "team").iterdir() if p.name.endswith(".tmp")]


def test_a_damaged_machine_id_is_named_not_replaced(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "s")
    machine_id(paths)
    (paths.root / "team" / "machine_id").write_text("not an id\n")
    with pytest.raises(TeamError, match="delete it to get a new id"):
        machine_id(paths)


def test_retries_double_up_to_the_cap_with_jitter() -> None:
    assert [retry_delay(n, 60.0, lambda: 1.0) for n in (1, 2, 3, 4, 7, 8, 50)] == [
        1.0, 2.0, 4.0, 8.0, 60.0, 60.0, 60.0,
    ]  # fmt: skip
    assert [retry_delay(n, 60.0, lambda: 0.0) for n in (1, 3, 9)] == [0.5, 2.0, 30.0]
    assert retry_delay(10**6, 5.0, lambda: 0.5) == 3.75
