"""The product tier's fixtures: the wheel and the sdist built once, installed once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from installed import Dists, Installed, build_dists, install_wheel


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel built from it, from a clean copy of this checkout."""
    return build_dists(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="session")
def installed(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel installed into a fresh venv, as `pip install .` leaves it for a user."""
    root = tmp_path_factory.mktemp("product")
    return install_wheel(dists, root / "venv", root / "home")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder outside the checkout to run the installed commands from."""
    path = tmp_path / "work"
    path.mkdir()
    return path
