"""The layers: imports follow the table of docs/design.md, no circle; exports resolve; hook light."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import layer_graph
import pytest

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "docs" / "design.md"


def _rows() -> list[tuple[str, ...]]:
    return layer_graph.layer_rows(DESIGN.read_text(encoding="utf-8"))


def _modules() -> dict[str, Path]:
    return {mod: REPO / path for mod, path in layer_graph.modules(REPO).items()}


# --- The layer table: the one place the order is written -------------------------------------


def test_the_layer_table_matches_the_folders() -> None:
    rows = _rows()
    assert len(rows) > 20, "the layer table of docs/design.md was not found"
    problems = layer_graph.table_problems(REPO, rows)
    assert not problems, "docs/design.md's layer table and the folders differ:\n" + "\n".join(
        problems
    )


def test_imports_point_only_to_the_rows_above() -> None:
    bad = layer_graph.violations(REPO, _rows())
    assert not bad, (
        "imports the layer table of docs/design.md forbids (a row may import only the rows above"
        " it; outside indexer/, of the indexer only the package `indexer`):\n"
        + "\n".join(f"{imp}: an import {why}" for why, imp in bad)
    )


def test_no_import_circle() -> None:
    circles = layer_graph.cycles(REPO)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_hook_imports_only_the_standard_library_at_module_level() -> None:
    # Every tool call runs the hook: ctxd's packages are imported by the few events answered,
    # lazily (the rest is checked at run time in tests/ctxd_hook/test_hook.py).
    allowed = set(sys.stdlib_module_names) | {"__future__", "ctxd_hook", "hook"}
    bad = []
    for mod, path in _modules().items():
        if not mod.startswith("ctxd_hook"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _module_level(tree.body):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            bad += [
                f"{mod}:{node.lineno} imports {n}" for n in names if n.split(".")[0] not in allowed
            ]
    assert not bad, "\n".join(bad)


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run when a module is imported: not in functions or classes, nor under
    `if TYPE_CHECKING:`; inside try, with and other ifs."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            found += _module_level(node.orelse)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(node, block, []):
                    found += _module_level(
                        inner.body if isinstance(inner, ast.ExceptHandler) else [inner]
                    )
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(node)
    return found


# The checks themselves can fail: each case is a module written where the table puts it.
_CASES = {
    # An upward import at module level, and a lazy one.
    "indexer/spool/up.py": ("from summarizer.common import tokens\n", "summarizer.common.tokens"),
    "indexer/redact/lazy.py": (
        "def f():\n    import indexer.writer.catch_up\n",
        "indexer.writer.catch_up",
    ),
    # Siblings: memory sits above resume, so resume may import memory, not the reverse.
    "summarizer/memory/sibling.py": (
        "from summarizer.resume import writer\n",
        "summarizer.resume.writer",
    ),
    # The indexer from outside: only as the package.
    "summarizer/common/deep.py": ("from indexer.errors import CtxdError\n", "indexer.errors"),
    # Imports written in strings: code run by `python -c`, `-m`, an entry string, a module name.
    "summarizer/resume/cmd.py": (
        "CODE = 'import sys; from summarizer.daemon.prebuild import main; main()'\n",
        "summarizer.daemon.prebuild",
    ),
    "summarizer/handoff/dash_m.py": (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-m', 'summarizer.daemon.prebuild', 'x'])\n",
        "summarizer.daemon.prebuild",
    ),
    "summarizer/tasks/entry.py": (
        "HANDLER = 'summarizer.cli.commands.task:cmd_task'\n",
        "summarizer.cli.commands.task",
    ),
    "summarizer/common/named.py": (
        "import importlib\nimportlib.import_module('summarizer.mcp.server')\n",
        "summarizer.mcp.server",
    ),
    # The hook's lazy import of an indexer module other than the package.
    "plugin/ctxd_hook/locks.py": (
        "def held():\n    from indexer.locks import lock_is_held\n",
        "indexer.locks",
    ),
}


def _copy_of_the_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for path in layer_graph.modules(REPO).values():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes((REPO / path).read_bytes())
    return root


@pytest.mark.parametrize("where", sorted(_CASES))
def test_the_check_finds_a_forbidden_import(tmp_path: Path, where: str) -> None:
    root = _copy_of_the_tree(tmp_path)
    source, target = _CASES[where]
    (root / where).write_text(f'"""A forbidden import."""\n\n{source}', encoding="utf-8")
    found = {(i.path, i.target) for _, i in layer_graph.violations(root, _rows())}
    assert (where, target) in found


def test_the_command_run_as_a_process_is_no_import_but_its_code_is(tmp_path: Path) -> None:
    # `python -m summarizer.cli.app run` uses the command line, which any layer may run (the
    # daemon's autostart does); a string that imports the command's code is an upward import.
    root = _copy_of_the_tree(tmp_path)
    (root / "summarizer/resume/launch.py").write_text(
        '"""Launches."""\n\nimport sys\n\n'
        "RUN = [sys.executable, '-m', 'summarizer.cli.app', 'run']\n"
        "CODE = 'from summarizer.cli.app import main; main()'\n",
        encoding="utf-8",
    )
    found = [i for _, i in layer_graph.violations(root, _rows()) if i.path.endswith("launch.py")]
    assert [(i.target, i.line) for i in found] == [("summarizer.cli.app", 6)]


def test_the_check_reads_no_import_in_a_docstring(tmp_path: Path) -> None:
    root = _copy_of_the_tree(tmp_path)
    (root / "indexer/spool/prose.py").write_text(
        '"""Read by `from summarizer.memory import store` (prose, not code)."""\n', encoding="utf-8"
    )
    assert not [i for i in layer_graph.imports(root) if i.path == "indexer/spool/prose.py"]


def test_the_check_finds_a_package_level_circle(tmp_path: Path) -> None:
    # An indexer module importing the package it is exported from: the circle the package's
    # lazy exports would hide if they were followed instead of read as the package's own imports.
    root = _copy_of_the_tree(tmp_path)
    (root / "indexer/spool/loop.py").write_text(
        '"""A loop."""\n\nfrom indexer import StatePaths\n', encoding="utf-8"
    )
    text = (root / "indexer/__init__.py").read_text(encoding="utf-8")
    (root / "indexer/__init__.py").write_text(
        text + '\n_LOOP = "indexer.spool.loop"\n', encoding="utf-8"
    )
    assert ["indexer", "indexer.spool.loop"] in layer_graph.cycles(root)
    found = {(i.path, i.target) for _, i in layer_graph.violations(root, _rows())}
    assert ("indexer/spool/loop.py", "indexer") in found


def test_the_table_check_finds_a_folder_with_no_row(tmp_path: Path) -> None:
    root = _copy_of_the_tree(tmp_path)
    (root / "summarizer/newjob").mkdir()
    (root / "summarizer/newjob/thing.py").write_text('"""New."""\n', encoding="utf-8")
    rows = [r for r in _rows() if r != ("indexer/daemon/",)]
    problems = layer_graph.table_problems(root, [*rows, ("summarizer/gone/",)])
    assert "summarizer/newjob/ has no row" in problems
    assert "summarizer/newjob/thing.py is in no row" in problems
    assert "indexer/daemon/ has no row" in problems
    assert "`summarizer/gone/` has a row but is not in the checkout" in problems


# --- The packages: exports, what importing them loads ----------------------------------------


@pytest.mark.parametrize("package", ["indexer", "summarizer"])
def test_lazy_exports_are_complete_and_resolve(package: str) -> None:
    module = importlib.import_module(package)
    exported = set(module.__all__)
    whole = getattr(module, "_MODULES", {})  # modules exported whole (indexer's query modules)
    assert not set(module._EXPORTS) & set(whole)
    assert exported == set(module._EXPORTS) | set(whole), "every export is in __all__ and back"
    for name in module.__all__:
        assert getattr(module, name) is not None
    for name, dotted in whole.items():
        assert getattr(module, name) is importlib.import_module(dotted)


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


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_only_tokens_imports_tiktoken() -> None:
    users = [
        str(p.relative_to(REPO))
        for p in _modules().values()
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


# --- Modules: where they live, their size, their docstring -----------------------------------


def test_every_summarizer_module_lives_in_a_job_folder() -> None:
    loose = sorted(
        p.name
        for p in (REPO / "summarizer").glob("*.py")
        if p.name not in ("__init__.py", "emit.py", "agent.py")  # the public names
    )
    assert not loose, f"modules outside the job folders: {loose}"


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


# --- SQL: the index's through the indexer, the memory's and the team's their own -------------

# Modules that run SQL of their own: the memory's tables (mem_*), which the summarizer owns.
_OWN_SQL = {
    "summarizer.memory.changes",
    "summarizer.memory.failure_fold",
    "summarizer.memory.merge",
    "summarizer.memory.reader",
    "summarizer.memory.store",
    "summarizer.memory.summary",
    "summarizer.memory.supersede",
    "summarizer.memory.tables",
}
# The team store's modules: their SQL goes to the team's PostgreSQL database, never to the
# index, so they may not import sqlite3 (the index is read through the indexer's API).
_TEAM = "summarizer.team."
_SQL_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+(\w+)")


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
    assert not bad, "SQL against the index belongs in the indexer, behind its API:\n" + "\n".join(
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
    # connection of their own: the index is read through the indexer's API.
    team = {mod: path for mod, path in _modules().items() if mod.startswith(_TEAM)}
    assert "summarizer.team.shipper" in team
    for mod, path in sorted(team.items()):
        assert "sqlite3" not in _runtime_imports(path), f"{mod} imports sqlite3"
