"""The README's first command, exactly as written, in a fresh copy of the checkout, ten times in
a row (the long variant): it installs and runs the demo, exits 0 and prints no error, each time.
Dependencies come from the wheelhouse (pip reads PIP_NO_INDEX and PIP_FIND_LINKS), so the run is
offline; everything else is what a user types."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, checkout_copy
from installed import Dists, ensure_wheelhouse, offline_pip_env, system_path

README = (REPO / "README.md").read_text(encoding="utf-8")
FIRST_COMMAND = re.findall(r"```sh\n(.*?)\n```", README, re.S)[0].strip()
# What a failed step prints: ctxd's one-line errors, a traceback, pip's errors.
_ERROR = re.compile(r"(^|\s)(error:|Traceback \(most recent call last\)|ERROR:)", re.M)


def _run_first_command(checkout: Path, home: Path) -> subprocess.CompletedProcess[str]:
    # The demo keeps its page in a temporary folder for the user to open: the test's own.
    scratch = home.parent / f"tmp-{home.name}"
    scratch.mkdir(exist_ok=True)
    env = offline_pip_env(PATH=system_path(), HOME=str(home), TMPDIR=str(scratch))
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["bash", "-c", FIRST_COMMAND],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _check(done: subprocess.CompletedProcess[str], run: int) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 0, (run, output[-3000:])
    assert not _ERROR.search(output), (run, _ERROR.search(output), output[-3000:])
    assert "$ ctxd search" in done.stdout and ".html" in done.stdout, done.stdout[-2000:]


def test_first_command_runs_the_demo(dists: Dists, tmp_path: Path) -> None:
    ensure_wheelhouse(dists)
    checkout = checkout_copy(tmp_path / "ctxd")
    (tmp_path / "home").mkdir()
    _check(_run_first_command(checkout, tmp_path / "home"), 1)


@pytest.mark.full
@pytest.mark.timeout(3600)  # ten installs and demos; on a loaded 2-core machine ~2 min each
def test_first_command_ten_times_in_a_row(dists: Dists, tmp_path: Path) -> None:
    ensure_wheelhouse(dists)
    checkout = checkout_copy(tmp_path / "ctxd")
    (tmp_path / "home").mkdir()
    for run in range(1, 11):
        _check(_run_first_command(checkout, tmp_path / "home"), run)
