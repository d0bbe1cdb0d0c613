"""The rules the hook keeps a copy of are the rules the rest of ctxd uses, to the letter.

The hook runs from the Claude Code plugin's folder with nothing but the standard library and its
own package, and no layer below it may import it: each rule that both sides need (where the
state dir is, how a spool line is written, the lost-event counters, the recall table's ids, how
the plugin finds the installed ctxd) is written twice, and these tests keep the two identical
(compared as syntax trees: comments aside, every character of code and docstring).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "plugin" / "ctxd_hook"

# (the hook's module, the other copy, the definitions they share, names the hook's copy uses
# for the same thing)
COPIES = [
    ("hook.py", "indexer/statedir.py", ("state_dir", "git_root"), {"_git_root": "git_root"}),
    ("hook.py", "indexer/safefs.py", ("_DIR_FLAGS", "UnsafeStateDir", "open_private_dir"), {}),
    (
        "hook.py",
        "indexer/spool/append.py",
        ("_ENVELOPE_VERSION", "HOSTS", "segment_name", "build_line", "append_at", "append_event"),
        {},
    ),
    ("losses.py", "indexer/lost_events.py", ("HOOK_FAILURES", "_HEADER", "_PLAIN"), {}),
    ("losses.py", "indexer/lost_events.py", ("_MAX_NAME",), {}),
    (
        "losses.py",
        "indexer/lost_events.py",
        ("DISK_FULL", "READ_ONLY", "NO_PERMISSION", "NOT_PRIVATE", "OTHER", "REASONS"),
        {},
    ),
    ("losses.py", "indexer/lost_events.py", ("user_counter_path", "_header"), {}),
    ("recall.py", "summarizer/resume/recall_table.py", ("RECALL_DIR", "command_files"), {}),
    ("recall.py", "summarizer/resume/recall_table.py", ("row_id",), {}),
    (
        "plugin.py",
        "summarizer/cli/setup/plugin_state.py",
        ("CTXD_VENV", "_PLACES", "installed_ctxd", "_interpreter"),
        {},
    ),
    ("plugin.py", "summarizer/cli/setup/gitignore.py", ("ignore_in_git",), {}),
]


def _definitions(path: Path, names: tuple[str, ...], renames: dict[str, str]) -> dict[str, str]:
    """The top-level definitions `names` of `path` (functions, classes, assignments), dumped."""
    text = path.read_text(encoding="utf-8")
    for old, new in renames.items():
        text = text.replace(old, new)
    found: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name = ast.unparse(target)
        else:
            name = getattr(node, "name", "")
        if name in names:
            found[name] = ast.dump(node)
    return found


def _id(value: object) -> str:
    return value if isinstance(value, str) else ",".join(value) if isinstance(value, tuple) else ""


@pytest.mark.parametrize(("hook_module", "other", "names", "renames"), COPIES, ids=_id)
def test_the_hooks_copy_is_identical_to_the_other(
    hook_module: str, other: str, names: tuple[str, ...], renames: dict[str, str]
) -> None:
    mine = _definitions(HOOK / hook_module, names, renames)
    theirs = _definitions(REPO / other, names, {})
    assert set(mine) == set(names), f"ctxd_hook/{hook_module} lacks {set(names) - set(mine)}"
    assert set(theirs) == set(names), f"{other} lacks {set(names) - set(theirs)}"
    differ = [name for name in names if mine[name] != theirs[name]]
    assert not differ, f"ctxd_hook/{hook_module} and {other} differ in {differ}"


def test_a_copy_that_drifts_is_found(tmp_path: Path) -> None:
    # The comparison can fail: one changed character in a copied function is reported.
    drifted = tmp_path / "append.py"
    text = (REPO / "indexer" / "spool" / "append.py").read_text(encoding="utf-8")
    drifted.write_text(text.replace('b"}\\n"', 'b"}\\r\\n"'), encoding="utf-8")
    names = ("build_line", "segment_name")
    assert _definitions(drifted, names, {})["build_line"] != _definitions(
        HOOK / "hook.py", names, {}
    )["build_line"]
    assert _definitions(drifted, names, {})["segment_name"] == _definitions(
        HOOK / "hook.py", names, {}
    )["segment_name"]
