"""`ctxd demo`: what it shows, the page it leaves, and a non-zero exit when a step fails."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, clean_env, hook_env, payload, run_hook

from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, writer_lock
from summarizer.cli.commands import demo


def _demo(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", "demo"],
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=env.pop("PYTHONPATH", str(REPO)), TMPDIR=str(tmp_path), **env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_demo_ends_with_a_search_the_page_and_what_to_run_next(tmp_path: Path) -> None:
    done = _demo(tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "$ ctxd search test_header_row" in out and "**test_header_row**" in out
    assert out.index("additionalContext") < out.index("$ ctxd search") < out.index("$ ctxd view")
    [page] = re.findall(r"^(/\S+\.html)$", out, re.M)  # what `ctxd view` printed
    assert Path(page).read_text().lstrip().lower().startswith("<!doctype html")
    assert out.rstrip().endswith(demo.NEXT.strip())
    # The temporary project is gone; the page, outside it, stays to be opened.
    project = re.search(r"hook events into (\S+) through", out)
    assert project and not Path(project.group(1)).exists()
    assert not Path(page).is_relative_to(project.group(1))


def test_demo_exits_non_zero_at_the_first_step_that_fails(tmp_path: Path) -> None:
    # A tokenizer that cannot load (a broken install): `ctxd compact` fails for real.
    broken = tmp_path / "broken" / "tiktoken"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('tiktoken is broken here')\n")
    done = _demo(tmp_path, PYTHONPATH=f"{broken.parent}:{REPO}")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ctxd demo: error: `ctxd compact` failed (exit 1)"), done.stderr
    assert "$ ctxd inject" not in done.stdout and demo.NEXT.strip() not in done.stdout


def test_a_step_that_does_not_finish_fails_instead_of_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Something else holds the index's lock, as a daemon would: `ctxd compact` waits for it to
    # compact. The demo's step gives up at its deadline and says so.
    paths = StatePaths(tmp_path / "state")
    assert (
        run_hook(
            payload(hook_event_name="UserPromptSubmit", prompt="hi"), hook_env(paths.root)
        ).returncode
        == 0
    )
    catch_up(paths)  # one indexed event, not compacted yet
    monkeypatch.setattr(demo, "STEP_TIMEOUT_S", 3.0)
    with writer_lock(paths), pytest.raises(demo.DemoFailed, match="did not finish within 3 s"):
        demo._step(paths, ["compact"])
