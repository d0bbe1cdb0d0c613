"""`ctxd view` on the demo session, opened in real headless Chromium."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser import load, screenshot
from helpers import query, run_cli

from summarizer.cli.commands.demo import replay
from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose state holds the demo session, replayed through the real hook."""
    project = tmp_path_factory.mktemp("demo-project")
    (project / ".git").mkdir()
    replay(project, demo_session(str(project)))
    return project / ".ctxd"


@pytest.fixture(scope="module")
def demo_page(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("page") / "demo.html"
    out = run_cli("view", DEMO_SESSION_ID[:8], "-o", str(page), state_dir=demo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(page)
    return page


def test_console_capture_sees_errors(tmp_path: Path) -> None:
    # The "no console errors" checks below mean something only if an error would be seen.
    page = tmp_path / "probe.html"
    page.write_text("<!doctype html><script>console.error('probe-7431')</script>")
    assert any("probe-7431" in line for line in load(page, tmp_path / "b").console)


def test_demo_page_loads_cleanly_with_every_lane_and_failure(
    demo: Path, demo_page: Path, tmp_path: Path
) -> None:
    loaded = load(demo_page, tmp_path / "b")
    assert loaded.console == []  # no error, no content-policy violation, nothing logged
    agents = [r[0] for r in query(demo, "SELECT agent_id FROM agents")]
    assert len(agents) == 2
    for lane in ["main", *agents]:
        assert f'class="lanehead lane" data-lane="{lane}"' in loaded.dom, lane
    failures = query(demo, "SELECT id FROM entries WHERE event='tool_failure' ORDER BY id")
    assert len(failures) == 3
    uses = query(
        demo,
        "SELECT u.id FROM entries u JOIN entries f ON f.tool_use_id=u.tool_use_id "
        "WHERE f.event='tool_failure' AND u.event='tool_use' ORDER BY u.id",
    )
    for (use_id,) in uses:
        assert f'class="item k-call s-failed" id="e{use_id}"' in loaded.dom
        assert f'<li class="failure" data-lane="main"><a href="#e{use_id}">' in loaded.dom
    assert "Failures (3)" in loaded.dom
    # What fixed them: the passing run, after the edit of src/export.py.
    assert loaded.dom.count("after: Edit src/export.py</div>") == 6  # on the rows and the list
    # Tasks, memory in force and the agents' outcomes are on the page.
    assert "Update the reports page button" in loaded.dom
    assert "Never touch the legacy billing module" in loaded.dom
    assert "stream rows with the stdlib csv module" in loaded.dom


def test_demo_page_screenshot_is_saved(demo_page: Path, tmp_path: Path) -> None:
    png = tmp_path / "artifacts" / "view.png"
    png.parent.mkdir()
    console = screenshot(demo_page, tmp_path / "b", png)
    assert console == []
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1366, 900)
    shutil.copy(demo_page, png.with_suffix(".html"))  # the artifact pair: page and its picture
