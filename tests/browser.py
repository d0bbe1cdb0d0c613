"""Load a local page in real headless Chromium: its DOM after scripts ran, a screenshot, console lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

# Offline and quiet: no sync, no component updates, no background fetches, a fresh profile.
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--hide-scrollbars",
)
# Chromium logs each console message (and each content-policy violation) as
# `[pid:tid:date:INFO:CONSOLE:line] "message", source: url (line)`.
_CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:?\d*\] \"(.*)\", source: ")


@dataclass(frozen=True)
class Loaded:
    dom: str
    console: list[str]


def chromium() -> str:
    """The Chromium binary; skip (fail under CI, where .ci/run installs it) when missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail("CI=true but chromium is missing: .ci/run installs it with apt-get")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def _run(page: Path, work: Path, extra: list[str]) -> subprocess.CompletedProcess[str]:
    profile = work / f"profile-{len(list(work.glob('profile-*')))}"
    return subprocess.run(
        [chromium(), *_FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=work,
    )


def load(page: Path, work: Path) -> Loaded:
    """The page's DOM once loaded (scripts run) and every console message it logged."""
    work.mkdir(parents=True, exist_ok=True)
    out = _run(page, work, ["--dump-dom"])
    assert out.returncode == 0, out.stderr[-2000:]
    return Loaded(out.stdout, _CONSOLE.findall(out.stderr))


def screenshot(page: Path, work: Path, png: Path, size: str = "1366,900") -> list[str]:
    """Save a laptop-sized screenshot of the page; return the console messages of that load."""
    work.mkdir(parents=True, exist_ok=True)
    out = _run(page, work, [f"--window-size={size}", f"--screenshot={png}"])
    assert out.returncode == 0 and png.is_file(), out.stderr[-2000:]
    return _CONSOLE.findall(out.stderr)
