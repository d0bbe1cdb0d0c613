"""Tests for summarizer.cli.setup.install: merging ctxd's hooks into Claude Code settings and removing them."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarizer.cli.setup.gitignore import ensure_gitignored
from summarizer.cli.setup.hook_command import HookCommand, default_hook_command, is_ctxd_handler
from summarizer.cli.setup.install import (
    EVENTS,
    RECALL_MATCHER,
    SettingsError,
    ctxd_hook_spec,
    install,
    merge_hooks,
    remove_hooks,
    uninstall,
)

DATA = Path(__file__).resolve().parents[3] / "data" / "install"
HOOK = HookCommand(("/abs/venv/bin/ctxd-hook",))
PY_HOOK = HookCommand(
    ("/abs/venv/bin/python", "-I", "-S", "/abs/venv/lib/python3.12/site-packages/indexer/hook.py")
)
SPEC = ctxd_hook_spec(HOOK)
BACKUP_NAME = re.compile(r"^settings\.json\.ctxd-backup$")  # one, replaced: none pile up


def project_from(tmp_path: Path, scenario: str) -> Path:
    """A project whose .claude/settings.json is a copy of tests/data/install/<scenario>."""
    path = tmp_path / "proj" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    shutil.copyfile(DATA / scenario / "settings.json", path)
    return path


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def backups(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith("settings.json."))


def ctxd_handlers(doc: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    return [
        (event, group.get("matcher"), h)
        for event, groups in doc.get("hooks", {}).items()
        for group in groups
        for h in group.get("hooks", [])
        if is_ctxd_handler(h)
    ]


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    st_ = path.stat()
    return path.read_bytes(), st_.st_ino, st_.st_mtime_ns


# --- the spec ---------------------------------------------------------------------------------


def test_spec_registers_every_event_once_in_exec_form() -> None:
    spec = ctxd_hook_spec(PY_HOOK)
    assert list(spec) == list(EVENTS) and len(EVENTS) == 13
    for event, groups in spec.items():
        assert len(groups) == 1 and len(groups[0]["hooks"]) == 1
        handler = groups[0]["hooks"][0]
        assert handler == {
            "type": "command",
            "command": "/abs/venv/bin/python",
            "args": ["-I", "-S", "/abs/venv/lib/python3.12/site-packages/indexer/hook.py"],
            "timeout": {"SessionStart": 10, "SessionEnd": 5}.get(event, 5),
        }
        # Only PreToolUse is narrowed (to Agent calls and the calls recall covers); every other
        # event listens to everything.
        assert groups[0].get("matcher") == (RECALL_MATCHER if event == "PreToolUse" else None)
    assert RECALL_MATCHER == "Agent|Task|Edit|Write|MultiEdit|NotebookEdit|Bash"
    # With `[resume] recall_on_action` off, PreToolUse runs for Agent calls only.
    assert ctxd_hook_spec(HOOK, recall=False)["PreToolUse"][0]["matcher"] == "Agent|Task"
    assert ctxd_hook_spec(HOOK)["Stop"][0]["hooks"][0]["args"] == []  # exec form even with no args


def test_spec_timeout_overrides() -> None:
    spec = ctxd_hook_spec(HOOK, {"SessionStart": 30, "PostToolUse": 2})
    assert spec["SessionStart"][0]["hooks"][0]["timeout"] == 30
    assert spec["PostToolUse"][0]["hooks"][0]["timeout"] == 2
    assert spec["Stop"][0]["hooks"][0]["timeout"] == 5


@pytest.mark.parametrize(
    "timeouts",
    [{"Stop": 2000}, {"Stop": 0}, {"Stop": -1}, {"Stop": 1.5}, {"Stop": True}, {"Stop": "5"},
     {"Notification": 5}],
)  # fmt: skip
def test_spec_rejects_bad_timeouts(timeouts: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"seconds|unknown"):
        ctxd_hook_spec(HOOK, timeouts)


def test_hook_command_validation() -> None:
    with pytest.raises(ValueError):
        HookCommand(())
    with pytest.raises(ValueError, match="absolute"):
        HookCommand(("bin/ctxd-hook",))  # relative to what? only a bare name means PATH
    assert HookCommand(("ctxd-hook",)).argv == ("ctxd-hook",)  # the portable, shared form
    with pytest.raises(ValueError, match="not a ctxd hook"):
        ctxd_hook_spec(HookCommand(("/usr/bin/true",)))  # install could never find it again
    assert HookCommand(("${CLAUDE_PROJECT_DIR}/.venv/bin/ctxd-hook",)).argv[0].startswith("$")


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        ({"type": "command", "command": "/v/bin/ctxd-hook", "args": []}, True),
        ({"type": "command", "command": "/v/bin/ctxd-hook"}, True),
        ({"type": "command", "command": "/v/bin/python", "args": ["-I", "-S", "/s/ctxd_hook/run_hook.py"]}, True),
        ({"type": "command", "command": "/v/bin/python", "args": ["-I", "-S", "/s/indexer/run_hook.py"]}, True),
        ({"type": "command", "command": "/v/bin/python", "args": ["-I", "-S", "/s/indexer/hook.py"]}, True),
        ({"type": "command", "command": "python3 /s/indexer/hook.py"}, True),
        ({"type": "command", "command": "'/My Venv/bin/ctxd-hook'"}, True),
        ({"type": "command", "command": "C:\\venv\\Scripts\\python.exe", "args": ["C:\\s\\indexer\\hook.py"]}, True),
        ({"type": "command", "command": "/v/bin/python", "args": ["-m", "indexer.hook"]}, True),
        ({"type": "command", "command": "/v/bin/my-ctxd-hook"}, False),
        ({"type": "command", "command": "/v/bin/ctxd-hook-wrapper"}, False),
        ({"type": "command", "command": "/x/hook.py"}, False),
        ({"type": "command", "command": "/x/otherindexer/hook.py"}, False),
        ({"type": "command", "command": "/x/otherctxd_hook/run_hook.py"}, False),
        ({"type": "command", "command": "/x/run_hook.py"}, False),
        ({"type": "http", "url": "http://localhost/ctxd-hook"}, False),
        ({"type": "prompt", "prompt": "ctxd-hook"}, False),
        ({"type": "command"}, False),
        ({"type": "command", "command": "", "args": [1, 2]}, False),
    ],
)  # fmt: skip
def test_is_ctxd_handler(handler: dict[str, Any], expected: bool) -> None:
    assert is_ctxd_handler(handler) is expected


# --- install into real files ------------------------------------------------------------------


def test_install_into_existing_project_keeps_everything(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    original_bytes = path.read_bytes()
    before = load(path)

    report = install(path, HOOK)

    after = load(path)
    assert list(after) == list(before)  # top-level key order kept
    assert {k: v for k, v in after.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    hooks = after["hooks"]
    # Existing events stay first, in their order; new ones follow in EVENTS order.
    assert list(hooks)[:3] == ["PreToolUse", "PostToolUse", "Notification"]
    assert list(hooks)[3:] == [e for e in EVENTS if e not in ("PreToolUse", "PostToolUse")]
    assert hooks["PreToolUse"][0] == before["hooks"]["PreToolUse"][0]  # the Bash guard
    assert hooks["PreToolUse"][1] == SPEC["PreToolUse"][0]  # ours, as its own group
    assert hooks["PostToolUse"] == [before["hooks"]["PostToolUse"][0], SPEC["PostToolUse"][0]]
    assert hooks["Notification"] == before["hooks"]["Notification"]
    assert len(ctxd_handlers(after)) == len(EVENTS)

    assert len(report.changes) == len(EVENTS)
    assert f"+ PreToolUse [{RECALL_MATCHER}] -> /abs/venv/bin/ctxd-hook (timeout 5s)" in report.changes
    assert "+ SessionStart -> /abs/venv/bin/ctxd-hook (timeout 10s)" in report.changes
    assert report.path == path
    assert report.backup is not None and backups(path) == [report.backup]
    assert BACKUP_NAME.match(report.backup.name)
    assert report.backup.read_bytes() == original_bytes
    assert stat.S_IMODE(report.backup.stat().st_mode) == 0o600


def test_install_twice_is_byte_identical_and_reports_nothing(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    install(path, PY_HOOK)
    first = fingerprint(path)

    again = install(path, PY_HOOK)

    assert again.changes == [] and again.backup is None
    assert fingerprint(path) == first  # not even rewritten
    assert len(backups(path)) == 1


def test_user_handler_in_group_with_same_matcher_stays(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    user_group = {
        "matcher": "Agent|Task",
        "hooks": [{"type": "command", "command": "/home/me/log-agents.sh", "timeout": 3}],
    }
    path.write_text(json.dumps({"hooks": {"PreToolUse": [user_group]}}))

    install(path, HOOK)

    assert load(path)["hooks"]["PreToolUse"] == [user_group, SPEC["PreToolUse"][0]]
    uninstall(path)
    assert load(path) == {"hooks": {"PreToolUse": [user_group]}}


def test_stale_ctxd_handlers_are_updated_in_place_not_duplicated(tmp_path: Path) -> None:
    path = project_from(tmp_path, "stale-ctxd")

    report = install(path, HOOK)

    hooks = load(path)["hooks"]
    # PostToolUse: updated in place next to the user's handler; the user's extra key survives.
    assert hooks["PostToolUse"] == [
        {
            "hooks": [
                {"type": "command", "command": "/home/me/bin/audit-log", "args": ["--json"]},
                {"type": "command", "command": "/abs/venv/bin/ctxd-hook", "timeout": 5,
                 "statusMessage": "spooling", "args": []},
            ]
        }
    ]  # fmt: skip
    # PreToolUse: the old catch-all registration is replaced by the narrow one.
    assert hooks["PreToolUse"] == SPEC["PreToolUse"]
    # Stop: the first duplicate is kept (it is current), the second removed.
    assert hooks["Stop"] == [
        {
            "hooks": [
                {"type": "command", "command": "/abs/venv/bin/ctxd-hook", "args": [], "timeout": 5}
            ]
        }
    ]
    assert "Notification" not in hooks  # no longer in the spec, and ctxd created it
    assert sorted(e for e, _, _ in ctxd_handlers({"hooks": hooks})) == sorted(EVENTS)
    assert (
        "~ PostToolUse -> /abs/venv/bin/ctxd-hook (timeout 5s)"
        " (was /old/venv/bin/ctxd-hook (timeout 2000s))"
    ) in report.changes
    assert "- PreToolUse -> /old/venv/bin/ctxd-hook (timeout 2000s)" in report.changes
    assert f"+ PreToolUse [{RECALL_MATCHER}] -> /abs/venv/bin/ctxd-hook (timeout 5s)" in report.changes
    assert "- Notification -> /old/venv/bin/ctxd-hook" in report.changes
    assert install(path, HOOK).changes == []


def test_millisecond_timeouts_of_other_handlers_are_left_alone(tmp_path: Path) -> None:
    path = project_from(tmp_path, "ms-timeouts")
    before = load(path)

    install(path, HOOK)

    hooks = load(path)["hooks"]
    assert hooks["SessionStart"][0] == before["hooks"]["SessionStart"][0]  # still 2000
    assert hooks["Stop"][0] == before["hooks"]["Stop"][0]  # still 5000
    assert hooks["SessionStart"][1]["hooks"][0]["timeout"] == 10
    assert hooks["Stop"][1]["hooks"][0]["timeout"] == 5
    uninstall(path)
    assert load(path) == before


def test_empty_project(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    assert uninstall(path).changes == [] and not path.parent.exists()  # nothing to remove

    report = install(path, HOOK)

    assert report.backup is None and len(report.changes) == len(EVENTS)
    assert load(path) == {"hooks": SPEC}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().endswith("}\n")

    report = uninstall(path)
    assert load(path) == {}
    assert len(report.changes) == len(EVENTS) and all(c.startswith("- ") for c in report.changes)
    assert report.backup is not None and load(report.backup) == {"hooks": SPEC}


def test_empty_file_counts_as_no_settings(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.touch()
    install(path, HOOK)
    assert load(path) == {"hooks": SPEC}


def test_uninstall_restores_the_document_and_its_order(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    before = load(path)
    install(path, PY_HOOK)

    report = uninstall(path)

    after = load(path)
    assert json.dumps(after) == json.dumps(before)  # equal, and in the same key order
    assert len(report.changes) == len(EVENTS)
    assert uninstall(path).changes == []


def test_existing_file_mode_is_kept(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    path.chmod(0o644)
    report = install(path, HOOK)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert report.backup is not None and stat.S_IMODE(report.backup.stat().st_mode) == 0o600


def test_nothing_changes_means_no_write_and_no_backup(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    before = fingerprint(path)
    report = uninstall(path)
    assert report.changes == [] and report.backup is None
    assert fingerprint(path) == before and backups(path) == []


def test_one_backup_holds_the_version_before_the_last_change(tmp_path: Path) -> None:
    path = project_from(tmp_path, "existing-project")
    install(path, HOOK)
    installed = path.read_bytes()
    uninstall(path)
    uninstalled = path.read_bytes()
    assert backups(path)[0].read_bytes() == installed
    install(path, HOOK)
    assert len(backups(path)) == 1 and BACKUP_NAME.match(backups(path)[0].name)
    assert backups(path)[0].read_bytes() == uninstalled


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty" / ".claude" / "settings.json"
    report = install(empty, HOOK, dry_run=True)
    assert len(report.changes) == len(EVENTS) and report.backup is None
    assert not empty.parent.exists()

    path = project_from(tmp_path, "existing-project")
    before = fingerprint(path)
    assert install(path, HOOK, dry_run=True).changes == install(path, HOOK, dry_run=True).changes
    assert fingerprint(path) == before and backups(path) == []

    install(path, HOOK)
    installed = fingerprint(path)
    assert len(uninstall(path, dry_run=True).changes) == len(EVENTS)
    assert fingerprint(path) == installed and len(backups(path)) == 1


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        ((DATA / "jsonc-comments" / "settings.json").read_bytes(), "no comments"),
        (b'{"permissions": {"allow": []},}', "trailing commas"),
        (b'{"model": "x"', "invalid JSON"),
        (b'\xef\xbb\xbf{"model": "x"}', "invalid JSON"),  # a BOM is not strict JSON either
        (b'{"timeout": NaN}', "invalid JSON"),
        (b"\xff\xfe{}", "invalid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"hooks": []}', '"hooks" is not an object'),
        (b'{"hooks": null}', '"hooks" is not an object'),
        (b'{"hooks": {"Stop": {"hooks": []}}}', '"hooks.Stop" is not a list'),
        (b'{"hooks": {"Stop": [{"hooks": "echo"}]}}', '"hooks.Stop" has a group'),
        (b'{"hooks": {"Stop": [{"hooks": ["echo"]}]}}', '"hooks.Stop" has a group'),
    ],
)
def test_invalid_settings_raise_a_one_line_error_and_change_nothing(
    tmp_path: Path, content: bytes, hint: str
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(content)
    for action in (lambda: install(path, HOOK), lambda: uninstall(path)):
        with pytest.raises(SettingsError) as info:
            action()
        message = str(info.value)
        assert isinstance(info.value, ValueError)
        assert message.startswith(f"{path}: ") and hint in message and "\n" not in message
        assert "ctxd init" in message  # says how to recover
        assert info.value.__cause__ is None and info.value.__suppress_context__
    assert path.read_bytes() == content and backups(path) == []
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_a_failed_write_leaves_the_original_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project_from(tmp_path, "existing-project")
    original = path.read_bytes()
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "settings.json":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space"):
        install(path, HOOK)
    assert path.read_bytes() == original
    leftovers = [p.name for p in path.parent.iterdir() if p != path and p not in backups(path)]
    assert leftovers == []


def test_symlinked_settings_are_written_through(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{"model": "opus"}\n')
    link = tmp_path / "home" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)

    report = install(link, HOOK)

    assert link.is_symlink() and load(real) == {"model": "opus", "hooks": SPEC}
    assert report.backup is not None and report.backup.parent == dotfiles


def test_default_hook_command_runs_the_real_hook(tmp_path: Path) -> None:
    command = default_hook_command()
    assert command.argv[0] == os.path.abspath(sys.executable)
    assert command.argv[1:3] == ("-I", "-S") and command.argv[3].endswith("ctxd_hook/run_hook.py")
    handler = ctxd_hook_spec(command)["Stop"][0]["hooks"][0]
    env = {"PATH": os.environ.get("PATH", ""), "CTXD_HOME": str(tmp_path / "state")}
    payload = b'{"session_id":"s1","hook_event_name":"Stop","cwd":"/tmp"}'
    done = subprocess.run(
        [handler["command"], *handler["args"]], input=payload, env=env, capture_output=True,
        timeout=handler["timeout"], check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b""


# --- ensure_gitignored ------------------------------------------------------------------------


def test_gitignore_created_and_idempotent(tmp_path: Path) -> None:
    assert ensure_gitignored(tmp_path) is True
    assert (tmp_path / ".gitignore").read_text() == ".ctxd/\n"
    assert ensure_gitignored(tmp_path) is False
    assert (tmp_path / ".gitignore").read_text() == ".ctxd/\n"


@pytest.mark.parametrize("line", [".ctxd", ".ctxd/", "/.ctxd/", "/.ctxd", "  .ctxd/  ", "**/.ctxd"])
def test_gitignore_equivalent_entry_is_not_duplicated(tmp_path: Path, line: str) -> None:
    content = f"node_modules/\n{line}\n*.log\n"
    (tmp_path / ".gitignore").write_text(content)
    assert ensure_gitignored(tmp_path) is False
    assert (tmp_path / ".gitignore").read_text() == content


def test_gitignore_without_trailing_newline(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n!.ctxd-keep\n.ctxdx")
    assert ensure_gitignored(tmp_path) is True
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n!.ctxd-keep\n.ctxdx\n.ctxd/\n"


# --- pure functions and properties ------------------------------------------------------------


def test_merge_and_remove_do_not_modify_their_input() -> None:
    doc = load(DATA / "stale-ctxd" / "settings.json")
    snapshot = copy.deepcopy(doc)
    merged = merge_hooks(doc, SPEC)
    assert doc == snapshot
    remove_hooks(merged.settings, is_ctxd_handler)
    assert doc == snapshot and merged.settings != doc
    merged.settings["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 99
    assert SPEC["Stop"][0]["hooks"][0]["timeout"] == 5  # the result does not alias the spec


def test_user_made_empty_containers_survive_a_round_trip() -> None:
    doc = {
        "hooks": {
            "PreToolUse": [{"matcher": "Agent|Task", "hooks": []}, {"matcher": "Bash"}],
            "Notification": [],
            "PermissionRequest": [{"hooks": []}],
        }
    }
    assert remove_hooks(merge_hooks(doc, SPEC).settings, is_ctxd_handler).settings == doc


def test_empty_containers_ctxd_filled_are_dropped_on_uninstall() -> None:
    # Documented limit: after install, ctxd cannot tell `"Stop": []` or `"hooks": {}` from
    # containers it created itself; Claude Code reads both as absent.
    for doc in ({"hooks": {}}, {"hooks": {"Stop": [], "Notification": []}}):
        back = remove_hooks(merge_hooks(doc, SPEC).settings, is_ctxd_handler).settings
        assert back == without_empty_containers(doc) != doc


json_scalars = (
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
)  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
commands = st.sampled_from(
    ["/usr/local/bin/fmt", "npx prettier --write", "${CLAUDE_PROJECT_DIR}/.claude/hooks/guard.sh",
     "python3", "/opt/hook.py", "ctxd", "/x/ctxd-hooks"]
) | st.text(min_size=1, max_size=16)  # fmt: skip
command_handlers = st.fixed_dictionaries(
    {"type": st.just("command"), "command": commands},
    optional={
        "args": st.lists(st.text(max_size=10), max_size=3),
        "timeout": st.sampled_from([1, 5, 30, 600, 2000, 5000]),
        "async": st.booleans(),
        "statusMessage": st.text(max_size=8),
    },
)
other_handlers = st.fixed_dictionaries(
    {"type": st.sampled_from(["http", "prompt", "agent", "mcp_tool"])},
    optional={
        "url": st.text(max_size=10),
        "prompt": st.text(max_size=10),
        "timeout": st.integers(1, 60),
    },
)
user_handlers = (command_handlers | other_handlers).filter(lambda h: not is_ctxd_handler(h))
groups = st.fixed_dictionaries(
    {"hooks": st.lists(user_handlers, max_size=3)},
    optional={"matcher": st.sampled_from(["", "*", "Agent|Task", "Task", "Agent", "Bash",
                                          "Edit|Write", "mcp__.*", "startup", "compact"])},
)  # fmt: skip
event_names = st.sampled_from([*EVENTS, "Notification", "PermissionRequest", "CwdChanged"])
hooks_objects = st.dictionaries(
    event_names | st.text(min_size=1, max_size=10), st.lists(groups, max_size=3), max_size=6
)
top_level_keys = st.sampled_from(
    ["permissions", "env", "model", "statusLine", "$schema"]
) | st.text(max_size=8)


@st.composite
def settings_documents(draw: st.DrawFn) -> dict[str, Any]:
    items = list(draw(st.dictionaries(top_level_keys.filter(lambda k: k != "hooks"), json_values,
                                      max_size=4)).items())  # fmt: skip
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), ("hooks", draw(hooks_objects)))
    return dict(items)


def has_empty_containers(doc: dict[str, Any]) -> bool:
    hooks = doc.get("hooks")
    return hooks == {} or any(hooks[e] == [] for e in EVENTS if e in (hooks or {}))


def without_empty_containers(doc: dict[str, Any]) -> dict[str, Any]:
    """Claude Code reads `"hooks": {}` and `"Stop": []` exactly as if they were absent.

    Only ctxd's events are normalised: other empty event lists must survive untouched.
    """
    doc = copy.deepcopy(doc)
    hooks = doc.get("hooks", {})
    for event in [e for e in EVENTS if hooks.get(e) == []]:
        del hooks[event]
    if "hooks" in doc and not hooks:
        del doc["hooks"]
    return doc


def assert_same_document(back: dict[str, Any], original: dict[str, Any]) -> None:
    if has_empty_containers(original):
        # An event list or `hooks` object that was empty before install is indistinguishable
        # from one install created, so uninstall drops it: semantically the same document.
        assert without_empty_containers(back) == without_empty_containers(original)
    else:
        assert json.dumps(back) == json.dumps(original)  # equal, key order included


@given(settings_documents())
@settings(max_examples=300)
def test_property_install_then_uninstall_gives_back_the_original(doc: dict[str, Any]) -> None:
    merged = merge_hooks(doc, SPEC)
    back = remove_hooks(merged.settings, is_ctxd_handler)
    assert_same_document(back.settings, doc)
    assert sorted(back.removed) == sorted(merged.added)


@given(settings_documents(), st.sampled_from([HOOK, PY_HOOK]))
@settings(max_examples=200)
def test_property_install_is_idempotent_and_complete(
    doc: dict[str, Any], command: HookCommand
) -> None:
    spec = ctxd_hook_spec(command)
    merged = merge_hooks(doc, spec)
    assert len(merged.added) == len(EVENTS) and merged.removed == merged.updated == []
    again = merge_hooks(merged.settings, spec)
    assert again.changes == [] and len(again.already_present) == len(EVENTS)
    assert json.dumps(again.settings) == json.dumps(merged.settings)
    found = ctxd_handlers(merged.settings)
    assert sorted(e for e, _, _ in found) == sorted(EVENTS)
    for event, matcher, handler in found:
        assert matcher == spec[event][0].get("matcher") and handler == spec[event][0]["hooks"][0]


@given(settings_documents())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_file_round_trip(doc: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".claude" / "settings.json"
        path.parent.mkdir()
        path.write_text(json.dumps(doc, indent=2))
        install(path, PY_HOOK)
        assert install(path, PY_HOOK).changes == []
        uninstall(path)
        assert_same_document(load(path), doc)
