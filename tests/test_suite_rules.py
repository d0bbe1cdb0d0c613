"""Rules for the test suite itself: no timed assertion, no sleep used as synchronization.

A test that asserts how long something took flakes on a loaded machine and proves nothing on a
fast one (speed is measured in bench/, against a baseline of the same run). A test that sleeps
and then asserts passes whenever the thing it waits for is merely slow. Both are found here by
reading the tests' syntax trees:

- an `assert` whose condition uses a clock reading (time.monotonic, perf_counter, process_time
  and their _ns forms), directly or through a variable computed from one in the same function;
- a `time.sleep` outside a loop (inside one it paces a polling or writing loop).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CLOCKS = frozenset({"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time"})


def _is_call_to(node: ast.AST, names: frozenset[str]) -> bool:
    """A call of time.<name>() or of a bare <name>() (from time import ...)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in names and isinstance(f.value, ast.Name) and f.value.id == "time"
    return isinstance(f, ast.Name) and f.id in names


def _dotted(node: ast.AST) -> str:
    """ "a.b.c" for a name or an attribute chain on a name, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return ""


def _target_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds: `x`, `a, b`, `obj.attr` (not obj), `x[i]` (x)."""
    if isinstance(target, ast.Tuple | ast.List):
        return [n for e in target.elts for n in _target_names(e)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Subscript):
        return _target_names(target.value)
    return [d] if (d := _dotted(target)) else []


def _walk_values(node: ast.AST) -> list[ast.AST]:
    """ast.walk, except inside f-strings: a reading formatted into a name or a message is
    not a measurement."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, ast.JoinedStr):
            todo.extend(ast.iter_child_nodes(n))
    return out


Functions = dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


class _Module:
    """Clock taint over one module: which names, parameters and return values carry a reading.

    A name is tainted when assigned (or appended to) from an expression that calls a clock or
    uses a tainted name; a parameter when a call in the module passes it a tainted argument;
    a function's return value (or one position of a returned tuple) when it is tainted.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.funcs: Functions = {
            n.name: n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.tainted: dict[str, set[str]] = {name: set() for name in self.funcs}
        self.returns: dict[str, set[int] | None] = {}  # None: the whole value
        changed = True
        while changed:
            changed = any([self._pass(name, f) for name, f in self.funcs.items()])

    def uses_clock(self, node: ast.AST, func: str) -> bool:
        tainted = self.tainted[func]
        for n in _walk_values(node):
            if _is_call_to(n, CLOCKS) or _dotted(n) in tainted:
                return True
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id in self.returns
            ):
                return True
        return False

    def _taint(self, func: str, names: list[str]) -> bool:
        new = set(names) - self.tainted[func]
        self.tainted[func] |= new
        return bool(new)

    def _pass(self, name: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                changed |= self._assign(name, node)
            elif isinstance(node, ast.Call):
                changed |= self._call(name, node)
            elif isinstance(node, ast.Return) and node.value is not None:
                changed |= self._return(name, node.value)
        return changed

    def _assign(
        self, func: str, node: ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr
    ) -> bool:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if value is None:
            return False
        call = value if isinstance(value, ast.Call) else None
        positions = (
            self.returns.get(call.func.id)
            if call and isinstance(call.func, ast.Name) and call.func.id in self.returns
            else None
        )
        changed = False
        for t in targets:
            if positions is not None and isinstance(t, ast.Tuple):  # a, took = timed(...)
                picked = [e for i, e in enumerate(t.elts) if i in positions]
                changed |= self._taint(func, [d for e in picked for d in _target_names(e)])
            elif self.uses_clock(value, func):
                changed |= self._taint(func, _target_names(t))
        return changed

    def _call(self, func: str, call: ast.Call) -> bool:
        f = call.func
        args_tainted = [self.uses_clock(a, func) for a in call.args]
        if isinstance(f, ast.Attribute) and f.attr in ("append", "extend", "add", "insert"):
            if any(args_tainted) and isinstance(f.value, ast.Name):
                return self._taint(func, [f.value.id])  # latencies.append(took)
            return False
        if not (isinstance(f, ast.Name) and f.id in self.funcs):
            return False
        callee = self.funcs[f.id]
        params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
        hit = [p for p, t in zip(params, args_tainted, strict=False) if t]
        hit += [k.arg for k in call.keywords if k.arg and self.uses_clock(k.value, func)]
        return self._taint(f.id, hit)

    def _return(self, func: str, value: ast.expr) -> bool:
        if isinstance(value, ast.Tuple):
            hit: set[int] | None = {i for i, e in enumerate(value.elts) if self.uses_clock(e, func)}
            if not hit:
                return False
        elif self.uses_clock(value, func):
            hit = None
        else:
            return False
        if func in self.returns and self.returns[func] == hit:
            return False
        self.returns[func] = hit
        return True

    def timed_asserts(self) -> list[int]:
        return [
            node.lineno
            for name, func in self.funcs.items()
            for node in ast.walk(func)
            if isinstance(node, ast.Assert) and self.uses_clock(node.test, name)
        ]


def _bare_sleeps(tree: ast.AST) -> list[int]:
    found: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        if _is_call_to(node, frozenset({"sleep"})) and not in_loop:
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, False)  # a new function: its own body decides
            else:
                visit(child, in_loop or isinstance(node, ast.While | ast.For | ast.AsyncFor))

    visit(tree, False)
    return found


def violations(source: str, name: str = "<test>") -> list[str]:
    """The rule breaks in one test module's source, as `name:line: what` strings."""
    tree = ast.parse(source)
    out = [f"{name}:{line}: sleep outside a polling loop" for line in _bare_sleeps(tree)]
    assert isinstance(tree, ast.Module)
    out += [
        f"{name}:{line}: assertion on a clock reading" for line in _Module(tree).timed_asserts()
    ]
    return sorted(set(out))


def test_no_test_asserts_a_duration_or_sleeps_to_synchronize() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found += violations(path.read_text(), path.name)
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "import time\ndef test():\n    t0 = time.monotonic()\n    f()\n"
        "    assert time.monotonic() - t0 < 1.0\n",
        "import time\ndef test():\n    start = time.perf_counter()\n    f()\n"
        "    elapsed = time.perf_counter() - start\n    assert elapsed < 1.0\n",
        "import time\ndef test():\n    t = time.monotonic_ns()\n    f()\n    took = time.monotonic_ns() - t\n"
        "    ok = took < 10**9\n    assert ok and True\n",
        "from time import perf_counter\ndef test():\n    s = perf_counter()\n    f()\n"
        "    assert perf_counter() - s < 2\n",
        "import time\ndef test():\n    start_daemon()\n    time.sleep(0.5)\n    assert running()\n",
        "from time import sleep\ndef test():\n    if x:\n        sleep(1)\n    assert y\n",
        "import time\ndef test():\n    for _ in range(3):\n        cb = lambda: time.sleep(1)\n",
        "import time\ndef test():\n    lat = []\n    for _ in range(3):\n        t0 = time.monotonic()\n"
        "        f()\n        lat.append(time.monotonic() - t0)\n    assert max(lat) < 1\n",
        "import time\ndef timed():\n    t = time.monotonic()\n    r = f()\n    return r, time.monotonic() - t\n"
        "def check(r, took):\n    assert took < 2\n"
        "def test():\n    r, took = timed()\n    check(r, took)\n",
    ],
    ids=[
        "direct",
        "elapsed-variable",
        "derived-flag",
        "from-import",
        "sleep",
        "sleep-in-if",
        "sleep-in-a-lambda",
        "appended",
        "returned-then-passed",
    ],
)
def test_the_rule_catches_timed_assertions_and_bare_sleeps(source: str) -> None:
    assert violations(source) != []


@pytest.mark.parametrize(
    "source",
    [
        "import time\ndef poll(p):\n    deadline = time.monotonic() + 10\n"
        "    while not p():\n        if time.monotonic() > deadline:\n"
        "            raise AssertionError('late')\n        time.sleep(0.02)\n",
        "import time\ndef test():\n    t0 = time.monotonic()\n    f()\n"
        "    print(f'took {time.monotonic() - t0:.1f} s')\n    assert g()\n",
        "import time\ndef test():\n    t0 = time.monotonic()\n    x = f()\n"
        "    assert x == 1, f'after {time.monotonic() - t0} s'\n",
        "import time\ndef timed():\n    t = time.monotonic()\n    r = f()\n    return r, time.monotonic() - t\n"
        "def test():\n    r, took = timed()\n    assert r == 0, took\n",
        "import time\ndef test():\n    name = f'x-{time.monotonic_ns()}'\n    assert g(name)\n",
    ],
    ids=[
        "polling-helper",
        "printed-duration",
        "duration-in-the-message",
        "result-beside-a-duration",
        "reading-in-a-name",
    ],
)
def test_the_rule_allows_polling_and_reporting(source: str) -> None:
    assert violations(source) == []
