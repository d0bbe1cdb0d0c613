"""Dependency direction and public API: indexer never imports summarizer; exports resolve."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The one sanctioned exception: the SessionStart branch of the hook imports the resume
# module lazily, after appending, and only for that event (ARCHITECTURE I1, issue 4 §4).
_ALLOWED = {
    ("indexer/hook_answers.py", "summarizer.resume.hook"),
    ("indexer/hook_answers.py", "summarizer.handoff.hook"),  # SubagentStart, the Agent call
}


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
        "import sys, indexer, summarizer, ctxd_hook.hook;"
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
        for p in sorted([*REPO.glob("indexer/**/*.py"), *REPO.glob("summarizer/**/*.py")])
        if any(n.split(".")[0] == "tiktoken" for n in _imports(p))
    ]
    assert users == ["summarizer/common/tokens.py"]


def test_readonly_schema_version_matches_the_store() -> None:
    from indexer.index import store
    from indexer.queries import readonly

    assert readonly.SCHEMA_VERSION == store.SCHEMA_VERSION


def test_read_on_a_current_index_loads_no_msgspec(tmp_path: Path) -> None:
    # The orchestrator's frequent `ctxd read`: when nothing is new it must stay light.
    from ctxd_hook.hook import run
    from indexer.paths import StatePaths
    from indexer.writer.catch_up import catch_up

    payload = b'{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}'
    run(payload, {"CTXD_HOME": str(tmp_path)}, "/")
    catch_up(StatePaths(tmp_path))
    code = (
        "import sys; from summarizer.cli.app import main;"
        f"main(['read', '--agent-id', 'main', '--state-dir', {str(tmp_path)!r}]);"
        "print('msgspec' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stderr.strip() == "False"
    assert '"prompt"' in out.stdout


# --- The layout: folders by job, dependencies pointing one way, no circle ----------------------

# Rank of each folder: an import may point to the same rank or lower, never higher.
_RANK = {
    "indexer": 0,
    "common": 1,
    "memory": 2,
    "resume": 2,
    "tasks": 2,
    "handoff": 2,
    "daemon": 3,
    "view": 3,
    "search": 3,
    "mcp": 3,
    "team": 3,
    "cli": 4,
}
# The SessionStart branch of the hook imports the resume hook lazily (the one upward import).
_UPWARD_ALLOWED = {
    ("indexer.hook_answers", "summarizer.resume.hook"),
    ("indexer.hook_answers", "summarizer.handoff.hook"),
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted([*REPO.glob("indexer/**/*.py"), *REPO.glob("summarizer/**/*.py")]):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(module: str, name: str, mods: dict[str, Path]) -> str:
    """The module `from module import name` loads: a submodule, the module a package's lazy
    export (`_EXPORTS`) resolves to, or the module itself."""
    if f"{module}.{name}" in mods:
        return f"{module}.{name}"
    if module in ("indexer", "summarizer"):
        lazy = importlib.import_module(module)._EXPORTS.get(name)
        if lazy:
            return str(lazy)
    return module


def _edges() -> dict[str, set[str]]:
    """module -> internal modules it imports anywhere in its body (lazy imports included)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [_target(node.module, a.name, mods) for a in node.names]
            for t in targets:
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def _rank(mod: str) -> int:
    parts = mod.split(".")
    if parts[0] == "indexer":
        return _RANK["indexer"]
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in _RANK):
        return _RANK[parts[1]]
    return 9  # the package itself and its public shims sit on top


def test_every_summarizer_module_lives_in_a_job_folder() -> None:
    loose = sorted(
        p.name
        for p in (REPO / "summarizer").glob("*.py")
        if p.name not in ("__init__.py", "emit.py", "agent.py")  # the public names
    )
    assert not loose, f"modules outside the job folders: {loose}"


def test_imports_never_point_up() -> None:
    bad = [
        f"{mod} -> {dep}"
        for mod, deps in _edges().items()
        for dep in sorted(deps)
        if _rank(dep) > _rank(mod) and (mod, dep) not in _UPWARD_ALLOWED
    ]
    assert not bad, (
        "imports pointing up (cli -> daemon -> memory/resume -> common -> indexer):\n"
        + "\n".join(bad)
    )


def test_no_import_circle() -> None:
    graph = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_public_entry_points_of_the_old_layout() -> None:
    import summarizer.cli
    import summarizer.emit
    from summarizer.cli.app import main
    from summarizer.memory.emit import emit

    assert summarizer.emit.emit is emit
    assert callable(summarizer.cli.main) and callable(main)


_MAX_LINES = 400


def test_no_module_over_400_lines_and_each_has_a_docstring() -> None:
    too_long, undocumented = [], []
    for mod, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > _MAX_LINES:
            too_long.append(f"{mod} ({len(text.splitlines())} lines)")
        # A one-line summary, alone on its line (a longer explanation may follow a blank line).
        lines = (ast.get_docstring(ast.parse(text)) or "").splitlines()
        if text.strip() and (not lines or not lines[0].strip() or lines[1:2] not in ([], [""])):
            undocumented.append(mod)
    assert not too_long, f"modules over {_MAX_LINES} lines: {too_long}"
    assert not undocumented, f"modules without a one-line docstring: {undocumented}"


# --- The indexer's public API: what the summarizer may import --------------------------------

# The indexer modules the summarizer may import (lazy imports included). `indexer` itself is
# the package, whose lazy exports (`indexer._EXPORTS`) are the curated helpers; every other
# module is internal. New public modules (a search or import API, say) are added here.
PUBLIC_INDEXER_MODULES = frozenset(
    {
        "indexer",
        "indexer.prepare.agentid",
        "indexer.queries.changes",
        "indexer.queries.porcelain",
        "indexer.transcripts.codex_rollouts",
        "indexer.config",
        "indexer.daemon.protocol",
        "indexer.errors",
        "indexer.queries.history",
        "indexer.lost_events",
        "indexer.spool.append",
        "indexer.statedir",
        "indexer.models",
        "indexer.paths",
        "indexer.retention.purge",
        "indexer.queries.query",
        "indexer.queries.search",
        "indexer.queries.recall",
        "indexer.safefs",
        "indexer.search.index",
        "indexer.search.query",
        "indexer.queries.sessions",
        "indexer.queries.tasks",
        "indexer.writer.import_ahead",
        "indexer.writer.importer",
        "indexer.transcripts.paths",
        "indexer.writer.catch_up",
    }
)
# Modules that run SQL of their own: the memory's tables (mem_*), which the summarizer owns.
_OWN_SQL = {
    "summarizer.memory.changes",
    "summarizer.memory.failure_fold",
    "summarizer.memory.merge",
    "summarizer.memory.store",
    "summarizer.memory.summary",
    "summarizer.memory.supersede",
    "summarizer.memory.tables",
}
# The team store's modules: their SQL goes to the team's PostgreSQL database, never to the
# index, so they may not import sqlite3 (the index is read through indexer.queries.changes).
_TEAM = "summarizer.team."
_SQL_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+(\w+)")


def _indexer_imports(path: Path, mods: dict[str, Path]) -> list[str]:
    """The indexer modules `path` names in its imports (not resolved through lazy exports)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "indexer"]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "indexer"
        ):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.append(sub if sub in mods else node.module)
    return found


def test_summarizer_imports_only_the_public_indexer_api() -> None:
    mods = _modules()
    bad = [
        f"{mod} imports {target}"
        for mod, path in mods.items()
        if mod.startswith("summarizer")
        for target in _indexer_imports(path, mods)
        if target not in PUBLIC_INDEXER_MODULES
    ]
    assert not bad, (
        "the summarizer reaches into indexer internals (use indexer.queries.query/history/purge or a "
        "name exported by the indexer package):\n" + "\n".join(bad)
    )


def test_public_indexer_modules_exist() -> None:
    assert set(_modules()) >= PUBLIC_INDEXER_MODULES


def test_the_layer_check_rejects_an_internal_import(tmp_path: Path) -> None:
    # The check itself can fail: an import of indexer.index.store is reported, a façade one is not.
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from indexer.index import store\nfrom indexer.queries import query\n"
        "from indexer.fileio import write_atomic\n"
    )
    found = set(_indexer_imports(bad, _modules())) - PUBLIC_INDEXER_MODULES
    assert found == {"indexer.index.store", "indexer.fileio"}


def test_summarizer_runs_sql_only_on_its_own_tables() -> None:
    bad = []
    for mod, path in _modules().items():
        if not mod.startswith("summarizer"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
                and mod not in _OWN_SQL
                and not mod.startswith(_TEAM)
            ):
                bad.append(f"{mod}:{node.lineno} calls .{node.func.attr}()")
        if mod in _OWN_SQL:
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for table in _SQL_TABLE.findall(node.value):
                        if not table.startswith("mem_") and table != "sqlite_master":
                            bad.append(f"{mod}:{node.lineno} names the index table {table}")
    assert not bad, "SQL against the index belongs in indexer.queries.query/history/purge:\n" + "\n".join(
        bad
    )


def _runtime_imports(path: Path) -> list[str]:
    """The modules `path` imports, leaving out `if TYPE_CHECKING:` blocks (types only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            node.body = []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_team_sql_goes_to_postgresql_only() -> None:
    # Their .execute() calls are exempt from the rule above because they never hold a SQLite
    # connection of their own: the index is read through indexer.queries.changes.
    team = {mod: path for mod, path in _modules().items() if mod.startswith(_TEAM)}
    assert "summarizer.team.shipper" in team
    for mod, path in sorted(team.items()):
        assert "sqlite3" not in _runtime_imports(path), f"{mod} imports sqlite3"
