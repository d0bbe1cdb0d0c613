"""Shared fixtures; the helper functions themselves live in tests/helpers.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `from helpers import ...` works however pytest was started (rootdir, -p, python -m pytest).
sys.path.insert(0, str(Path(__file__).resolve().parent))
# tests/indexer/ and tests/summarizer/ mirror the packages: the real packages
# (the checkout's root) must be found before those folders.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Some tests reuse another test module's helpers (`from test_daemon import ...`).
sys.path.append(str(Path(__file__).resolve().parent / "e2e"))
sys.path.append(str(Path(__file__).resolve().parent / "product"))
sys.path.append(str(Path(__file__).resolve().parent / "indexer"))
sys.path.append(str(Path(__file__).resolve().parent / "summarizer/cli"))
sys.path.append(str(Path(__file__).resolve().parent / "summarizer/common"))
sys.path.append(str(Path(__file__).resolve().parent / "summarizer/daemon"))
sys.path.append(str(Path(__file__).resolve().parent / "summarizer/memory"))
sys.path.append(str(Path(__file__).resolve().parent / "summarizer/resume"))

from helpers import CORPUS


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under CI the real-payload corpus is required: its tests must not skip unnoticed."""
    if os.environ.get("CI", "").lower() in ("true", "1") and not (CORPUS / "hooks").is_dir():
        raise pytest.UsageError(
            f"CI=true but the real-payload corpus is missing at {CORPUS}/hooks: put it next to "
            "the checkout (../shared/corpus) or set CTXD_TEST_CORPUS"
        )


@pytest.fixture(autouse=True, scope="session")
def _own_xdg_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A hook that cannot spool an event counts it in the user's state folder when it cannot
    write the state dir: in tests, a folder of this run's own, never the real home's."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    yield
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A state directory path under tmp_path, not yet created (the hook or CLI creates it)."""
    return tmp_path / "state"
