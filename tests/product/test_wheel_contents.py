"""What `pip install .` installs: every module of the checkout, its package data, both commands."""

from __future__ import annotations

import subprocess
import tarfile

from helpers import REPO
from installed import Dists, Installed


def _tracked(*patterns: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--", *patterns], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in out.splitlines() if line]


def _in_wheel(path: str) -> str:
    """Where a tracked file goes in the wheel: the hook's package lives in plugin/ here."""
    return path.removeprefix("plugin/")


def test_wheel_holds_every_module_and_its_data(dists: Dists) -> None:
    names = dists.wheel_names()
    expected = [
        _in_wheel(f)
        for f in _tracked("indexer", "summarizer", "plugin/ctxd_hook")
        if not f.endswith((".pyc",))
    ]
    assert expected
    missing = [f for f in expected if f not in names]
    assert missing == [], f"the wheel lacks {len(missing)} files: {missing[:20]}"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert entry_points


def test_sdist_holds_every_module(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    missing = [f for f in _tracked("indexer", "summarizer", "plugin/ctxd_hook") if f not in members]
    assert missing == [], f"the sdist lacks {len(missing)} files: {missing[:20]}"
    assert "pyproject.toml" in members and "README.md" in members


def test_installed_commands_import_every_module(installed: Installed) -> None:
    """Every module imports from the installed venv (a module that needs a dependency the
    wheel does not declare fails here), and both commands start."""
    modules = [
        _in_wheel(f)[:-3].replace("/", ".").removesuffix(".__init__")
        for f in _tracked("indexer/*.py", "summarizer/*.py", "summarizer/**/*.py", "plugin/ctxd_hook/*.py")
        # Scripts that run when imported: the hook's launcher and `python -m` entry points.
        if f != "plugin/ctxd_hook/run_hook.py" and not f.endswith("__main__.py")
    ]
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    done = installed.run("python", "-I", "-c", code, *modules, cwd=installed.home)
    assert done.returncode == 0, done.stderr[-3000:]
    version = installed.run("ctxd", "--version", cwd=installed.home)
    assert version.returncode == 0 and version.stdout.strip(), version.stderr
    hook = installed.run("ctxd-hook", cwd=installed.home, stdin="not json")
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr
