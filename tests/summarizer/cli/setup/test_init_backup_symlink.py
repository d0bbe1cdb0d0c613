"""`ctxd init` does not follow a symlinked backups folder with the settings it backs up."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import clean_env, run_cli


def test_a_symlinked_backups_folder_gets_no_backup(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.local.json"
    settings.write_text(json.dumps({"env": {"API_TOKEN": "kept-in-settings-0044"}}))
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".ctxd").mkdir(mode=0o700)
    (project / ".ctxd" / "backups").symlink_to(outside)
    done = run_cli("init", cwd=project, env=clean_env(HOME=str(tmp_path / "home")))
    assert list(outside.iterdir()) == []
    assert done.returncode != 0
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "symlink" in err and "Traceback" not in err


def test_a_plain_backups_folder_gets_the_backup(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.local.json"
    settings.write_text(json.dumps({"env": {"API_TOKEN": "kept-in-settings-0044"}}))
    done = run_cli("init", cwd=project, env=clean_env(HOME=str(tmp_path / "home")))
    assert done.returncode == 0, done.stderr
    backups = list((project / ".ctxd" / "backups").iterdir())
    assert len(backups) == 1 and backups[0].stat().st_mode & 0o777 == 0o600
