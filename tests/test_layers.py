"""Dependency direction and public API: indexer never imports summarizer; exports resolve."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The one sanctioned exception: the SessionStart branch of the hook imports the resume
# module lazily, after appending, and only for that event (ARCHITECTURE I1, issue 4 §4).
_ALLOWED = {("indexer/hook.py", "summarizer.resume_hook")}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted((REPO / "indexer").glob("*.py")), ids=lambda p: p.name)
def test_indexer_never_imports_summarizer(path: Path) -> None:
    rel = str(path.relative_to(REPO))
    bad = [
        name
        for name in _imports(path)
        if name.split(".")[0] == "summarizer" and (rel, name) not in _ALLOWED
    ]
    assert not bad, f"{rel} imports {bad}: dependencies point summarizer -> indexer only"


@pytest.mark.parametrize("package", ["indexer", "summarizer"])
def test_lazy_exports_are_complete_and_resolve(package: str) -> None:
    module = importlib.import_module(package)
    exported = set(module.__all__)
    assert exported == set(module._EXPORTS), "every export is listed in __all__ and vice versa"
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_importing_the_packages_loads_no_heavy_module() -> None:
    # `ctxd-hook` imports `indexer` first; `ctxd read` imports `summarizer` first.
    code = (
        "import sys, indexer, summarizer, indexer.hook;"
        "heavy = {'msgspec', 'sqlite3', 'tiktoken', 'watchdog', 'apscheduler'};"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_only_tokens_imports_tiktoken() -> None:
    users = [
        str(p.relative_to(REPO))
        for p in sorted(REPO.glob("*/*.py"))
        if p.parent.name in ("indexer", "summarizer")
        and any(n.split(".")[0] == "tiktoken" for n in _imports(p))
    ]
    assert users == ["summarizer/tokens.py"]


def test_readonly_schema_version_matches_the_store() -> None:
    from indexer import readonly, store

    assert readonly.SCHEMA_VERSION == store.SCHEMA_VERSION


def test_read_on_a_current_index_loads_no_msgspec(tmp_path: Path) -> None:
    # The orchestrator's frequent `ctxd read`: when nothing is new it must stay light.
    from indexer.hook import run
    from indexer.paths import StatePaths
    from indexer.writer import catch_up

    payload = b'{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}'
    run(payload, {"CTXD_HOME": str(tmp_path)}, "/")
    catch_up(StatePaths(tmp_path))
    code = (
        "import sys; from summarizer.cli import main;"
        f"main(['read', '--agent-id', 'main', '--state-dir', {str(tmp_path)!r}]);"
        "print('msgspec' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stderr.strip() == "False"
    assert '"prompt"' in out.stdout
