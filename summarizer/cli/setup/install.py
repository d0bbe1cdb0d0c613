"""`ctxd init`: merge ctxd's hooks into a Claude Code settings file and remove exactly those."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shlex
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from summarizer.cli.setup.hook_command import HookCommand, is_ctxd_handler

__all__ = [
    "EVENTS", "RECALL_MATCHER", "InstallReport", "IsOurs", "MergeResult", "SettingsError", "Spec",
    "backup_path", "ctxd_hook_spec", "install", "merge_hooks", "remove_hooks", "rewrite_json",
    "uninstall", "write_private",
]  # fmt: skip

EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
    "SubagentStart", "SubagentStop", "Stop", "PreCompact", "PostCompact", "SessionEnd",
    "TaskCreated", "TaskCompleted",
)  # fmt: skip
# PreToolUse serialises against the tool: ctxd listens for a subagent's prompt (`Task` is the
# pre-2.1.63 name of `Agent`) and, with `[resume] recall_on_action`, before recalled calls.
_MATCHERS = {"PreToolUse": "Agent|Task"}
RECALL_MATCHER = "Agent|Task|Edit|Write|MultiEdit|NotebookEdit|Bash"
# SessionStart may build the resume context; every other hook only appends one spool line.
_DEFAULT_TIMEOUTS_S = {event: 5 for event in EVENTS} | {"SessionStart": 10, "SessionEnd": 5}
# Claude Code's own default; anything larger is almost surely milliseconds (reference §7 #14).
_MAX_TIMEOUT_S = 600
_STRICT = "Claude Code reads strict JSON (no comments, no trailing commas)"
_FIX = "fix or move the file aside, then run `ctxd init` again"

IsOurs = Callable[[dict[str, Any]], bool]
Spec = dict[str, list[dict[str, Any]]]  # event -> matcher groups, shaped as in settings.json


class SettingsError(ValueError):
    """A settings file is not strict JSON or its `hooks` tree has the wrong shape."""


@dataclass(frozen=True)
class MergeResult:
    """A new settings document and what changed, as `Event [matcher] -> command` labels."""

    settings: dict[str, Any]
    added: list[str]
    already_present: list[str]
    removed: list[str]
    updated: list[str] = field(default_factory=list)  # ours, rewritten in place

    @property
    def changes(self) -> list[str]:
        """Human-readable change lines: `+` added, `~` updated in place, `-` removed."""
        pairs = (("+", self.added), ("~", self.updated), ("-", self.removed))
        return [f"{sign} {label}" for sign, labels in pairs for label in labels]


@dataclass(frozen=True)
class InstallReport:
    """Where install/uninstall wrote (or would write), the backup it made, and the changes."""

    path: Path
    backup: Path | None
    changes: list[str]
    created: bool = False  # the file did not exist before
    deleted: bool = False  # the file held nothing but ctxd's hooks and is gone


def ctxd_hook_spec(command: HookCommand, timeouts: Mapping[str, int] | None = None,
                   recall: bool = True) -> Spec:  # fmt: skip
    """The matcher groups ctxd wants per event (`recall`: PreToolUse before recalled calls too)."""
    chosen = dict(timeouts or {})
    unknown = sorted(set(chosen) - set(EVENTS))
    if unknown:
        raise ValueError(f"timeouts for unknown events: {', '.join(unknown)}")
    for event, value in chosen.items():
        if type(value) is not int or not 1 <= value <= _MAX_TIMEOUT_S:
            raise ValueError(f"timeout for {event} must be 1..600 seconds (not ms): {value!r}")
    base = {"type": "command", "command": command.argv[0], "args": list(command.argv[1:])}
    if not is_ctxd_handler(base):
        # Otherwise the next install could not find the handler again and would duplicate it.
        raise ValueError(
            f"not a ctxd hook command (ctxd-hook or ctxd_hook/run_hook.py): {command.argv}"
        )
    spec: Spec = {}
    for event in EVENTS:
        timeout = chosen.get(event, _DEFAULT_TIMEOUTS_S[event])
        matcher = RECALL_MATCHER if recall and event == "PreToolUse" else _MATCHERS.get(event)
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{**base, "args": list(command.argv[1:]), "timeout": timeout}]
        spec[event] = [group]
    return spec


def merge_hooks(settings: dict[str, Any], spec: Spec, *, is_ours: IsOurs = is_ctxd_handler,
                ) -> MergeResult:  # fmt: skip
    """Return `settings` with exactly `spec`'s handlers installed; the input is not modified.

    Ours under the same matcher is updated in place (keys the user added to it are kept); ours
    elsewhere (an old matcher, a duplicate, an event not in `spec`) is removed; a missing one
    goes in a group of its own at the end of the event. A user's group is never edited, so
    uninstall can drop ctxd's groups whole.
    """
    doc = _checked_copy(settings)
    hooks: dict[str, Any] = doc.get("hooks", {})
    result = MergeResult(doc, [], [], [], [])
    for event in [e for e in hooks if e not in spec]:
        result.removed.extend(_strip_event(hooks, event, is_ours))
    for event, wanted_groups in spec.items():
        _merge_event(hooks, event, wanted_groups, is_ours, result)
    if hooks:  # a no-op when it was there; otherwise it goes last
        doc["hooks"] = hooks
    return result


def remove_hooks(settings: dict[str, Any], is_ours: IsOurs) -> MergeResult:
    """Return `settings` without `is_ours` handlers (nor what that empties); input unmodified."""
    doc = _checked_copy(settings)
    removed: list[str] = []
    hooks = doc.get("hooks", {})
    for event in list(hooks):
        removed += _strip_event(hooks, event, is_ours)
    if removed and not hooks:
        del doc["hooks"]
    return MergeResult(doc, [], [], removed)


def install(settings_path: Path, command: HookCommand, *, dry_run: bool = False,
            timeouts: Mapping[str, int] | None = None, backup_dir: Path | None = None,
            recall: bool = True) -> InstallReport:  # fmt: skip
    """Merge ctxd's hooks into `settings_path` (created if missing); no write if nothing changes."""
    spec = ctxd_hook_spec(command, timeouts, recall)
    return _rewrite(settings_path, dry_run, lambda s: merge_hooks(s, spec), backup_dir)


def uninstall(settings_path: Path, *, dry_run: bool = False, delete_if_empty: bool = False,
              backup_dir: Path | None = None) -> InstallReport:  # fmt: skip
    """Remove every ctxd handler from `settings_path`; a missing file means nothing to do.

    With `delete_if_empty` (ctxd created the file), a file left as `{}` is deleted, not kept.
    """
    report = _rewrite(
        settings_path, dry_run, lambda s: remove_hooks(s, is_ctxd_handler), backup_dir
    )
    if delete_if_empty and not dry_run and _load(report.path)[2] == {}:
        report.path.unlink(missing_ok=True)
        if report.backup is not None:  # it held only ctxd's hooks: nothing worth keeping
            report.backup.unlink(missing_ok=True)
        return InstallReport(report.path, None, report.changes, deleted=True)
    return report


def backup_path(settings_path: Path, backup_dir: Path | None = None) -> Path:
    """The one backup ctxd keeps of a settings file: as it was before ctxd last changed it.

    In `backup_dir` (`ctxd init` uses `.ctxd/backups/`, which git ignores) the name carries
    a hash of the file's path, so a project's and the user's settings.json do not collide.
    """
    if backup_dir is None:
        return settings_path.with_name(settings_path.name + ".ctxd-backup")
    tag = hashlib.sha1(str(settings_path.absolute()).encode()).hexdigest()[:8]
    return backup_dir / f"{settings_path.name}.{tag}.ctxd-backup"


def _norm_matcher(matcher: object) -> str:
    # Claude Code treats a missing matcher, "" and "*" alike: match everything.
    return "" if matcher in (None, "", "*") else str(matcher)


def _describe(handler: dict[str, Any]) -> str:
    text = shlex.join(str(a) for a in [handler.get("command"), *(handler.get("args") or [])])
    return f"{text} (timeout {handler['timeout']}s)" if "timeout" in handler else text


def _label(event: str, matcher: object, handler: dict[str, Any]) -> str:
    m = _norm_matcher(matcher)
    return f"{event}{f' [{m}]' if m else ''} -> {_describe(handler)}"


def _merge_event(hooks: dict[str, Any], event: str, wanted_groups: list[dict[str, Any]],
                 is_ours: IsOurs, out: MergeResult) -> None:  # fmt: skip
    groups: list[dict[str, Any]] = hooks.get(event, [])
    claimed: set[int] = set()  # ids of our handlers that stay
    new_groups: list[dict[str, Any]] = []
    for wanted in wanted_groups:
        matcher = _norm_matcher(wanted.get("matcher"))
        new: list[dict[str, Any]] = []
        for want in wanted.get("hooks", []):
            hit = next(
                ((g["hooks"], i) for g in groups if _norm_matcher(g.get("matcher")) == matcher
                 for i, h in enumerate(g.get("hooks", [])) if id(h) not in claimed and is_ours(h)),
                None,
            )  # fmt: skip
            if hit is None:
                new.append(copy.deepcopy(want))
                continue
            handlers, i = hit
            have = handlers[i]
            if all(have.get(k) == v for k, v in want.items()):
                out.already_present.append(_label(event, matcher, have))
            else:
                handlers[i] = {**have, **copy.deepcopy(want)}
                out.updated.append(f"{_label(event, matcher, handlers[i])} (was {_describe(have)})")
            claimed.add(id(handlers[i]))
        if new:
            new_groups.append({**{k: v for k, v in wanted.items() if k != "hooks"}, "hooks": new})
            out.added.extend(_label(event, matcher, h) for h in new)
    if event in hooks:
        stale = _strip_event(hooks, event, lambda h: is_ours(h) and id(h) not in claimed)
        out.removed.extend(stale)
    if new_groups:
        hooks.setdefault(event, []).extend(new_groups)


def _strip_event(hooks: dict[str, Any], event: str, drop: IsOurs) -> list[str]:
    """Drop handlers, then a group or the event only if that emptied it (empty ones stay)."""
    kept_groups: list[dict[str, Any]] = []
    removed: list[str] = []
    for group in hooks[event]:
        handlers = group.get("hooks", [])
        flags = [drop(h) for h in handlers]
        if any(flags):
            gone = [h for h, f in zip(handlers, flags, strict=True) if f]
            removed += [_label(event, group.get("matcher"), h) for h in gone]
            group["hooks"] = [h for h, f in zip(handlers, flags, strict=True) if not f]
            if not group["hooks"]:
                continue
        kept_groups.append(group)
    if removed and not kept_groups:
        del hooks[event]
    else:
        hooks[event] = kept_groups
    return removed


def _checked_copy(settings: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(settings, dict):
        raise SettingsError("the top level is not a JSON object")
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError('"hooks" is not an object (expected {"EventName": [groups]})')
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise SettingsError(f'"hooks.{event}" is not a list of matcher groups')
        for handlers in (g.get("hooks", []) for g in groups):
            if not isinstance(handlers, list) or not all(isinstance(h, dict) for h in handlers):
                raise SettingsError(f'"hooks.{event}" has a group whose "hooks" is not a list')
    return copy.deepcopy(settings)


def _load(requested: Path) -> tuple[Path, bytes | None, dict[str, Any]]:
    """(real path, raw bytes or None if missing, parsed document); strict JSON only."""
    # Write through a symlink (dotfile managers) instead of replacing the link with a file.
    path = requested.resolve() if requested.is_symlink() else requested
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return path, None, {}
    if not raw.strip():
        return path, raw, {}  # an empty (e.g. `touch`ed) file holds no settings yet
    try:
        # parse_constant=int rejects NaN and Infinity, which Python accepts and JSON does not.
        return path, raw, json.loads(raw.decode("utf-8"), parse_constant=int)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}: {e.msg}"
        raise SettingsError(f"{path}: invalid JSON ({where}); {_STRICT}; {_FIX}") from None
    except ValueError as e:  # not UTF-8, or NaN/Infinity
        raise SettingsError(f"{path}: invalid JSON ({e}); {_FIX}") from None


def _rewrite(requested: Path, dry_run: bool, change: Callable[[dict[str, Any]], MergeResult],
             backup_dir: Path | None = None) -> InstallReport:  # fmt: skip
    """Load, change, and (unless nothing changed or `dry_run`) back up and write atomically."""
    path, raw, settings = _load(requested)
    try:
        result = change(settings)
    except SettingsError as e:
        raise SettingsError(f"{path}: {e}; {_FIX}") from None
    changes = result.changes
    if not changes or dry_run:
        return InstallReport(path, None, changes)
    data = (json.dumps(result.settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    backup, mode = None, 0o600  # settings may hold secrets in `env`
    if raw is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        mode = stat.S_IMODE(path.stat().st_mode)
        backup = backup_path(path, backup_dir)  # one file, replaced: no pile of backups
        if backup_dir is None:
            backup.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:  # in the state dir, which holds no symlink ctxd follows: settings hold secrets
            from indexer import ensure_private_dir

            ensure_private_dir(backup_dir)
        _write_atomic(backup, raw, 0o600)
    _write_atomic(path, data, mode)
    return InstallReport(path, backup, changes, created=raw is None)


rewrite_json = _rewrite  # the same for Codex's hooks.json (summarizer.cli.setup.codex_install)


def write_private(path: Path, data: bytes) -> None:
    """Write a file of ctxd's own (0600) atomically."""
    _write_atomic(path, data, 0o600)


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Temp file in the same directory, fsync, os.replace, fsync the directory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
