"""The product as a user installs it: the wheel built from this checkout, in a fresh venv.

Nothing here imports the checkout. The wheel and the sdist are built (offline, from a copy of
the files git would clone) once per test session; the venv gets the wheel and its dependencies
from a local wheelhouse, so a package or a dependency that `pyproject.toml` leaves out is missing
here exactly as it would be for a user. Commands run from a temporary folder with no PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from helpers import REPO, checkout_copy, clean_env

CACHE = Path(os.environ.get("CTXD_TEST_CACHE", Path.home() / ".cache" / "ctxd-test"))
# Dependency wheels for offline installs (filled by .ci/run; by the first test run otherwise).
WHEELHOUSE = CACHE / "wheelhouse"
# What an isolated build of the checkout needs (pipx and uv build it in an isolated env).
BUILD_REQUIREMENTS = ("setuptools>=68", "wheel")


@dataclass(frozen=True)
class Dists:
    """The wheel and the sdist built from this checkout."""

    wheel: Path
    sdist: Path

    def wheel_names(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as z:
            return set(z.namelist())


def build_dists(out: Path) -> Dists:
    """Build the sdist, then the wheel from the sdist (as pip does), from a clean copy."""
    src = checkout_copy(out / "src")
    dist = out / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Dists(next(dist.glob("*.whl")), next(dist.glob("*.tar.gz")))


def fill_wheelhouse(*requirements: str) -> None:
    """Download what `requirements` need into the wheelhouse (the one step that uses the
    package index; .ci/run does it before the tests)."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--dest", str(WHEELHOUSE), *requirements],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, (
        f"cannot fill the wheelhouse {WHEELHOUSE} (package index unreachable?): "
        + done.stderr[-2000:]
    )
    for own in WHEELHOUSE.glob("ctxd_claude-*"):  # pip copies the wheel asked for: not a dep
        own.unlink()


def ensure_wheelhouse(dists: Dists) -> None:
    """The wheelhouse holds every dependency of the wheel and what an isolated build needs."""
    probe = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "-q",
        str(dists.wheel),
        *BUILD_REQUIREMENTS,
    ]
    if _run_pip(probe).returncode != 0:
        fill_wheelhouse(str(dists.wheel), *BUILD_REQUIREMENTS)


def offline_pip_env(**extra: str) -> dict[str, str]:
    """pip (and what calls pip: pipx, the build frontends) reading only the wheelhouse."""
    return clean_env(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        **extra,
    )


@dataclass(frozen=True)
class Installed:
    """A fresh virtual environment holding the installed wheel; commands run like a user's."""

    bin: Path  # where the installed commands are (a venv's bin/, pipx's or uv's bin dir)
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        """A user's environment: the venv's commands first on PATH, HOME apart, no checkout,
        no Claude Code or ctxd variables of the machine running the tests."""
        env = {
            k: v
            for k, v in clean_env().items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE", "CTXD", "VIRTUAL_ENV"))
        }
        env.update(HOME=str(self.home), PATH=f"{self.bin}{os.pathsep}{system_path()}")
        env.update(extra)
        return env

    def run(
        self,
        *args: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        timeout: float = 180.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run an installed command (`ctxd`, `ctxd-hook`, the venv's `python`) in `cwd`."""
        exe = args[0] if os.path.isabs(args[0]) else str(self.bin / args[0])
        return subprocess.run(
            [exe, *args[1:]],
            cwd=cwd,
            env=dict(env) if env is not None else self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def install_wheel(dists: Dists, venv: Path, home: Path) -> Installed:
    """A fresh venv with the wheel installed (not editable), dependencies from the wheelhouse."""
    ensure_wheelhouse(dists)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    done = _run_pip([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(dists.wheel)])
    assert done.returncode == 0, done.stderr[-3000:]
    home.mkdir(parents=True, exist_ok=True)
    installed = Installed(venv / "bin", home)
    # The checkout is not what runs: the packages come from the venv's site-packages.
    where = installed.run(
        "python",
        "-c",
        "import indexer, summarizer; print(indexer.__file__, summarizer.__file__)",
        cwd=home,
    )
    assert where.returncode == 0, where.stderr
    assert str(REPO) not in where.stdout and str(venv) in where.stdout, where.stdout
    return installed


def _run_pip(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=offline_pip_env(), capture_output=True, text=True, timeout=900, check=False
    )


def system_path() -> str:
    """PATH without the test run's own venv (a user's shell has no such thing on it)."""
    own = Path(sys.executable).parent
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != own]
    return os.pathsep.join(keep)
