"""Shared fixtures; the helper functions themselves live in tests/helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# `from helpers import ...` works however pytest was started (rootdir, -p, python -m pytest).
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A state directory path under tmp_path, not yet created (the hook or CLI creates it)."""
    return tmp_path / "state"
