"""The import graph of ctxd's folders and its check against the layer table of docs/design.md.

The order of the layers is written once, in that table: each row names folders (`indexer/spool/`,
its modules) or files (`indexer/__init__.py`), bottom layer first, and a module may import only
modules of its own row or of a row above it; outside indexer/, of the indexer's modules only the
package `indexer`. Imports are read from every module's syntax tree:
at module level, inside functions (lazy), under `if TYPE_CHECKING:`, and in string constants that
are code: `"from x import y"`, `"import x"`, `"-m x.y"`, `"x.y:func"` entry strings and a bare
`"x.y"` module name (what `importlib.import_module`, a lazy-export table or a `-m` argument
list is given). Docstrings are prose and left out; so are file paths. Two things are not
imports: the `ctxd` command run as a process (`-m summarizer.cli.app`, or that module's name as
data: its public command line, which any layer may run; `summarizer/common/programs.py` names
it), and the query modules the API exports whole (`from indexer import history` imports the
package `indexer`, whose own table loads the module).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Top-level package -> its folder in the checkout.
PACKAGES = {"indexer": "indexer", "summarizer": "summarizer", "ctxd_hook": "plugin/ctxd_hook"}
# The sentence that introduces the table in docs/design.md.
TABLE_INTRO = "each folder imports only the folders above it in this table"
# Outside indexer/, the indexer is imported only as the package `indexer` (its public API).
INDEXER_API = "indexer"

_PKG = r"(?:indexer|summarizer|ctxd_hook)"
_NAME = rf"{_PKG}(?:\.\w+)*"
_IN_STRINGS = (
    re.compile(rf"\bfrom\s+({_NAME})\s+import\s+\(?\s*(\w+)"),  # "from x.y import z"
    re.compile(rf"\bimport\s+({_NAME})\b"),  # "import x.y"
    re.compile(rf"(?:^|\s)-m\s+({_NAME})\b"),  # "python -m x.y"
    re.compile(rf"\b({_PKG}(?:\.\w+)+):\w+"),  # "x.y:func", an entry point
)
_MODULE_NAME = re.compile(rf"{_PKG}(?:\.\w+)+")  # a string that is a dotted module name
# The `ctxd` command's module: run as a process, never imported across layers.
COMMAND_MODULE = "summarizer.cli.app"


@dataclass(frozen=True)
class Import:
    """One import of a ctxd module by another, where it is written."""

    importer: str
    target: str
    path: str
    line: int
    how: str  # "import", "lazy import", "string"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} -> {self.target} ({self.how})"


def layer_rows(design_text: str) -> list[tuple[str, ...]]:
    """The paths each row of the layer table names (its first cell's `code` spans), bottom first."""
    intro = re.search(r"\s+".join(map(re.escape, TABLE_INTRO.split())), design_text)
    if intro is None:
        raise ValueError(f"no layer table: the page does not say {TABLE_INTRO!r}")
    start = intro.end()
    rows: list[tuple[str, ...]] = []
    for line in design_text[start:].splitlines()[1:]:
        if not line.strip() and not rows:
            continue
        if not line.startswith("|"):
            break
        first = line.strip("|").split("|")[0]
        if set(first.strip()) <= set("-: "):
            continue  # the header's rule
        paths = tuple(re.findall(r"`([^`]+)`", first))
        if paths:
            rows.append(paths)
    return rows


def modules(root: Path) -> dict[str, str]:
    """Every module of the three packages, every subfolder included: dotted name -> file path
    relative to `root`."""
    found: dict[str, str] = {}
    for package, folder in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder).with_suffix("")
            parts = [package, *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = str(path.relative_to(root))
    return found


def row_of(path: str, rows: list[tuple[str, ...]]) -> int | None:
    """The row of a module's file: the row naming the file, else the row naming its folder."""
    folder = path.rsplit("/", 1)[0] + "/"
    for wanted in (path, folder):
        for index, paths in enumerate(rows):
            if wanted in paths:
                return index
    return None


def table_problems(root: Path, rows: list[tuple[str, ...]]) -> list[str]:
    """Where the table and the folders disagree: a path named twice or not there, a module in
    no row, a folder of modules with no row of its own."""
    problems = []
    named = [p for paths in rows for p in paths]
    problems += [
        f"`{p}` is named in two rows" for p in sorted({p for p in named if named.count(p) > 1})
    ]
    for p in named:
        on_disk = root / p
        if not (on_disk.is_dir() if p.endswith("/") else on_disk.is_file()):
            problems.append(f"`{p}` has a row but is not in the checkout")
    files = sorted(modules(root).values())
    problems += [f"{f} is in no row" for f in files if row_of(f, rows) is None]
    for folder in sorted({f.rsplit("/", 1)[0] + "/" for f in files}):
        inside = [f for f in files if f.rsplit("/", 1)[0] + "/" == folder]
        if folder not in named and not all(f in named for f in inside):
            problems.append(f"{folder} has no row")
    return problems


def imports(root: Path) -> list[Import]:
    """Every import of a ctxd module by another one (lazy ones and those in strings included)."""
    mods = modules(root)
    whole = _exported_whole(root)
    found = []
    for importer, path in mods.items():
        tree = ast.parse((root / path).read_text(encoding="utf-8"), path)
        package = importer if path.endswith("__init__.py") else importer.rpartition(".")[0]
        for line, name, attr, how in _named(tree, package):
            if how == "string" and name == COMMAND_MODULE and not attr:
                continue  # the command run as a process (`-m`, argv data), not imported
            outside = not _within(importer, INDEXER_API)
            exported_whole = outside and (name, attr) in whole
            target = INDEXER_API if exported_whole else _resolve(name, attr, mods)
            if target and target != importer:
                found.append(Import(importer, target, path, line, how))
    return list(dict.fromkeys(found))  # `from x import a, b` once


def _exported_whole(root: Path) -> set[tuple[str, str]]:
    """(`indexer`, name) for each module the indexer's API exports whole (its `_MODULES`)."""
    tree = ast.parse((root / PACKAGES[INDEXER_API] / "__init__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_MODULES" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                (INDEXER_API, k.value)
                for k in node.value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    return set()


def _named(tree: ast.Module, package: str) -> Iterator[tuple[int, str, str, str]]:
    """(line, module, name imported from it or "", how) for each import the tree writes."""
    lazy = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        how = "lazy import" if id(node) in lazy else "import"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, "", how
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importer's package up
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                yield node.lineno, base, alias.name, how
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        ):
            text = node.value
            for pattern in _IN_STRINGS:
                for match in pattern.finditer(text):
                    yield (
                        node.lineno,
                        match.group(1),
                        match.group(2) if pattern.groups > 1 else "",
                        "string",
                    )
            if _MODULE_NAME.fullmatch(text):
                yield node.lineno, text, "", "string"


def _resolve(name: str, attr: str, mods: dict[str, str]) -> str:
    """The ctxd module an import loads: `x.y` of `from x import y` when y is a module, else the
    longest prefix of the name that is one ("" for none). A package's lazy exports are not
    followed: `from indexer import Config` imports the package, whose own edges go on."""
    if attr and f"{name}.{attr}" in mods:
        return f"{name}.{attr}"
    parts = name.split(".")
    while parts and ".".join(parts) not in mods:
        parts.pop()
    return ".".join(parts)


UP = "of a row further down the table"
INTERNAL = "of an indexer module from outside indexer/ (import the package `indexer`)"


def violations(root: Path, rows: list[tuple[str, ...]]) -> list[tuple[str, Import]]:
    """The imports the order forbids, each with why (UP or INTERNAL): of a later row (up, or a
    sibling not above), and, from outside indexer/, of any indexer module but the package."""
    mods = modules(root)
    bad = []
    for imp in imports(root):
        mine, theirs = row_of(mods[imp.importer], rows), row_of(mods[imp.target], rows)
        if mine is None or theirs is None:
            continue  # table_problems reports it
        if theirs > mine:
            bad.append((UP, imp))
        elif (
            not _within(imp.importer, INDEXER_API)
            and _within(imp.target, INDEXER_API)
            and imp.target != INDEXER_API
        ):
            bad.append((INTERNAL, imp))
    return sorted(bad, key=lambda b: (b[0] != UP, b[1].path, b[1].line))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def cycles(root: Path) -> list[list[str]]:
    """The import circles among ctxd's modules (Tarjan's strongly connected components), each
    sorted; a circle inside one module is none."""
    graph: dict[str, set[str]] = {m: set() for m in modules(root)}
    for imp in imports(root):
        graph[imp.importer].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)
