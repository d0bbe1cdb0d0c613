"""SessionStart hook output: the prebuilt resume context, injected once (stdlib fast path)."""

# Runs inside `ctxd-hook` on every SessionStart, so module-level imports are the standard
# library only; msgspec, sqlite3 and tiktoken are imported only by the build path, which runs
# when no prebuilt context exists. Every public function swallows errors: the hook must print
# valid hook output or nothing, and never fail the session (I1).

from __future__ import annotations

import os
import time

from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.resume.fastjson import encode_string, loads
from summarizer.resume.files import (
    CLEAR_HANDOFF_S,
    CONSUMED_FILE,
    CONTEXT_FILE,
    LATEST_FILE,
    LOCK_FILE,
    MAX_CONTEXT_CHARS,
    STARTUP_FILE,
    STARTUP_MAX_CHARS,
    STATE_FILE,
    lock_folder,
    running_summary_text,
)

# typing costs ~5 ms to import; this constant is the idiom type checkers understand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

__all__ = [
    "CLEAR_HANDOFF_S",
    "CONSUMED_FILE",
    "CONTEXT_FILE",
    "LATEST_FILE",
    "LOCK_FILE",
    "MAX_CONTEXT_CHARS",
    "STARTUP_FILE",
    "STARTUP_MAX_CHARS",
    "STATE_FILE",
    "HookSettings",
    "autostart",
    "claim_context",
    "hook_output",
    "lock_folder",
    "plan_session_start",
    "read_settings",
    "running_summary_text",
    "session_start_output",
    "spawn_daemon",
    "spawn_detached",
    "take_context",
]

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_SPAWNED: list[Any] = []  # keeps Popen objects alive: no ResourceWarning in long-lived callers


class HookSettings:
    """The config keys the hook reads (defaults as in config.toml)."""

    def __init__(self, doc: dict[str, Any] | None = None) -> None:
        resume = _table(doc, "resume")
        daemon = _table(doc, "daemon")
        inject_on = resume.get("inject_on", ["compact", "resume", "clear"])
        self.inject_on = (
            [s for s in inject_on if isinstance(s, str)] if isinstance(inject_on, list) else []
        )
        self.inject_on_startup = resume.get("inject_on_startup", True) is True
        timeout = resume.get("build_timeout_s", 3.0)
        self.build_timeout_s = float(timeout) if isinstance(timeout, int | float) else 3.0
        max_chars = resume.get("max_chars", MAX_CONTEXT_CHARS)
        valid = isinstance(max_chars, int) and 0 < max_chars <= MAX_CONTEXT_CHARS
        self.max_chars = max_chars if valid else MAX_CONTEXT_CHARS
        self.autostart = daemon.get("autostart") is True
        self.prebuild = resume.get("prebuild", True) is True


def session_start_output(payload: bytes, state_dir: str) -> str:
    """The hook's stdout for a SessionStart payload: hook JSON, or "" (never raises).

    Every decision, to inject or not, is appended with its reason to the session's
    `resume/<session>/starts.jsonl`.
    """
    try:
        event = loads(payload)
        if not isinstance(event, dict) or event.get("hook_event_name") != "SessionStart":
            return ""
        session_id = event.get("session_id")
        source = event.get("source") or "startup"
        if not _valid_id(session_id) or not isinstance(source, str) or not os.path.isdir(state_dir):
            return ""
        settings = read_settings(state_dir)
        from summarizer.resume.handback import LOCK_FILE as DECISION_LOCK
        from summarizer.resume.handback import log_decision

        folder = os.path.join(state_dir, "resume", str(session_id))
        os.makedirs(folder, mode=0o700, exist_ok=True)
        # One decision at a time per session: a concurrent SessionStart sees this one's log.
        lock = lock_folder(folder, DECISION_LOCK)
        try:
            try:
                text, reason, origin = plan_session_start(state_dir, event, settings, consume=True)
            finally:
                if settings.autostart:
                    autostart(state_dir)
            out = hook_output(text, settings.max_chars) if text.strip() else ""
            transcript = event.get("transcript_path")
            log_decision(
                folder,
                source,
                len(text) if out else 0,
                reason,
                notes_of=origin,
                transcript=transcript if isinstance(transcript, str) else "",
            )
        finally:
            os.close(lock)
        return out
    except Exception:
        return ""


def plan_session_start(
    state_dir: str,
    event: dict[str, Any],
    settings: HookSettings,
    *,
    consume: bool,
    build_timeout_s: float | None = None,
) -> tuple[str, str, str]:
    """(text to hand back, why, the session the notes describe) for one SessionStart.

    `consume` marks the prebuilt context as handed back; `ctxd resume --preview` passes False.
    """
    from summarizer.resume.handback import (
        REPEATED_COMPACT,
        decide,
        live_context,
        live_from_log,
        read_log,
    )

    session_id = str(event.get("session_id"))
    source = str(event.get("source") or "startup")
    folder = os.path.join(state_dir, "resume", session_id)
    live = None
    if source == "resume":
        live = live_context(event.get("transcript_path"))
        if live is None:
            records = read_log(folder)
            live = live_from_log(records) if records else None
    go, why = decide(source, settings.inject_on, settings.inject_on_startup, live)
    if go and source == "compact" and _handed_back_since_last_event(state_dir, folder, session_id):
        go, why = False, REPEATED_COMPACT
    if not go:
        return "", why, ""
    if source == "startup":
        text = _startup_text(state_dir)
        if not text.strip():
            return "", why + "; nothing is open in this project", ""
        return text, why, ""
    timeout = settings.build_timeout_s if build_timeout_s is None else build_timeout_s
    text, origin, how = _notes(state_dir, session_id, source, timeout, consume)
    if not text.strip():
        return "", f"{why}; nothing could be handed back: {how}", origin
    return text, f"{why} ({how})", origin


def hook_output(text: str, max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """`{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`."""
    context = _cap(text, max_chars).encode("utf-8", "replace").decode("utf-8")
    return (
        '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":'
        + encode_string(context)
        + "}}\n"
    )


def read_settings(state_dir: str) -> HookSettings:
    """The hook's settings from `<state_dir>/config.toml`; defaults if missing or invalid."""
    try:
        with open(os.path.join(state_dir, "config.toml"), "rb") as f:
            data = f.read()
    except OSError:
        return HookSettings()
    try:
        from summarizer.resume.hook_config import parse_settings

        return HookSettings(dict(parse_settings(data.decode("utf-8"))))
    except (ValueError, UnicodeDecodeError):
        return HookSettings()  # `ctxd doctor` reports a bad config; the hook must not fail


def claim_context(
    folder: str, *, newer_than_ns: int = 0, must_be_session_end: bool = False
) -> str | None:
    """Consume a prebuilt context once: None if none is usable (build one), "" if it is not
    to be injected (low confidence, or consumed already).

    A state that does not cover the session's events up to `newer_than_ns` (seen in the spool,
    not yet indexed) is stale: None. The rename of context.md is the claim: of concurrent
    hooks exactly one succeeds; the consumed context stays on disk for `ctxd resume`.
    """
    plain = is_plain_dir(folder)
    if plain is False or is_plain_dir(os.path.dirname(folder)) is False:
        return ""  # a symlink (or no directory) in the state dir: never read through it
    try:
        state = loads(read_nofollow(os.path.join(folder, STATE_FILE)))
    except (OSError, ValueError):
        return None  # missing or corrupt: the build path writes a fresh one
    if not isinstance(state, dict):
        return None
    covers = state.get("covers_ns")
    if newer_than_ns and (not isinstance(covers, int) or covers < newer_than_ns):
        return None
    if state.get("confidence") not in ("high", "medium"):
        return ""
    if must_be_session_end and state.get("trigger") != "session_end":
        return ""
    consumed = os.path.join(folder, CONSUMED_FILE)
    try:
        lock = lock_folder(folder)
    except OSError:
        return ""
    try:
        os.rename(os.path.join(folder, CONTEXT_FILE), consumed)
    except OSError:
        return ""  # consumed already (or never written): inject nothing
    finally:
        os.close(lock)
    try:
        return read_nofollow(consumed).decode("utf-8")
    except (OSError, ValueError):
        return ""


def autostart(state_dir: str) -> subprocess.Popen[bytes] | None:
    """Start `ctxd run` detached unless a daemon holds (or is taking) the lock; never waits.

    Returns the started process, or None when none was started (or starting failed).
    """
    try:
        import fcntl

        from indexer.locks import lock_is_held

        if lock_is_held(os.path.join(state_dir, "daemon.lock")):
            return None
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        guard = os.open(os.path.join(state_dir, "autostart.lock"), flags, 0o600)
        try:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another hook is starting it, or its daemon still runs
            if lock_is_held(os.path.join(state_dir, "daemon.lock")):
                return None
            # The daemon inherits the guard, so the flock stays held for its whole life:
            # concurrent hooks see it and spawn nothing while it starts or runs.
            return spawn_daemon(state_dir, pass_fds=(guard,))
        finally:
            os.close(guard)
    except Exception:
        return None


def spawn_daemon(state_dir: str, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """Run `ctxd run --state-dir …` in a new session with stdio on /dev/null."""
    proc = spawn_detached(["summarizer.cli.app", "run", "--state-dir", state_dir], pass_fds)
    _SPAWNED.append(proc)
    return proc


def spawn_detached(
    module_argv: list[str], pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """Run `python -m <module_argv>` from this checkout in a new session, stdio on /dev/null."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # stdout/stderr on /dev/null: a child holding the hook's pipes makes Claude Code wait
    # for it (hooks reference §7 #7).
    return subprocess.Popen(
        [sys.executable, "-m", *module_argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=root,
        env=env,
        start_new_session=True,
        close_fds=True,
        pass_fds=pass_fds,
    )


# --- private ----------------------------------------------------------------------------


def _notes(
    state_dir: str, session_id: str, source: str, timeout_s: float, consume: bool
) -> tuple[str, str, str]:
    """(notes, the session they describe, how they were obtained)."""
    from summarizer.resume.spool_tail import newest_event_ns

    resume_dir = os.path.join(state_dir, "resume")
    spool = os.path.join(state_dir, "spool")
    newest = newest_event_ns(spool, session_id)
    text = take_context(os.path.join(resume_dir, session_id), newer_than_ns=newest, consume=consume)
    if text is not None:
        return text, session_id, "prebuilt"
    if source == "clear" and not newest:
        other = _clear_handoff(resume_dir, session_id)
        if other:
            text = take_context(
                os.path.join(resume_dir, other),
                newer_than_ns=newest_event_ns(spool, other),
                must_be_session_end=True,
                consume=consume,
            )
            if text is not None:
                return text, other, "prebuilt when that session ended"
    if source == "compact":
        # A daemon or the builder PreCompact started holds the writer lock and is writing this
        # compaction's notes: wait for them (all the time there is) rather than build the same
        # thing in parallel on a machine that is busy already; build only if the lock is let go
        # without fresh notes.
        started = time.monotonic()
        waited = _wait_for_prebuilt(state_dir, session_id, newest, timeout_s, consume)
        if waited is not None:
            return waited, session_id, "prebuilt, waited for the builder"
        timeout_s -= time.monotonic() - started
    folder = _build_within(state_dir, session_id, source, timeout_s) if timeout_s > 0.1 else ""
    if not folder:
        from summarizer.resume.fallback_notes import fallback_notes
        from summarizer.resume.handback import NOTES_HEAD

        # Never silent: the latest request, tasks and files from the spool's tail.
        quick = "" if source == "clear" else fallback_notes(state_dir, session_id, NOTES_HEAD)
        if quick:
            return quick, session_id, "from the spool's tail: the full notes were not ready"
        return "", "", f"no recorded history, or the build did not finish within {timeout_s:g} s"
    text = take_context(folder, consume=consume)
    return text or "", os.path.basename(folder), "built now"


def _wait_for_prebuilt(
    state_dir: str, session_id: str, newest: int, wait_s: float, consume: bool
) -> str | None:
    from indexer.locks import lock_is_held

    folder = os.path.join(state_dir, "resume", session_id)
    deadline = time.monotonic() + wait_s
    while lock_is_held(os.path.join(state_dir, "daemon.lock")):
        text = take_context(folder, newer_than_ns=newest, consume=consume)
        if text is not None or time.monotonic() >= deadline:
            return text
        time.sleep(0.02)
    return take_context(folder, newer_than_ns=newest, consume=consume)


def take_context(
    folder: str, *, newer_than_ns: int = 0, must_be_session_end: bool = False, consume: bool = True
) -> str | None:
    """The prebuilt context of a resume folder, or None if missing or stale (build one).

    Unlike `claim_context`, confidence does not gate it and a context handed back already is
    handed back again: whether to inject is `summarizer.resume.handback.decide`'s call, not the
    file's. With `consume`, context.md is renamed to consumed-context.md (under the folder
    lock) so a writer does not re-arm a context built from the same events.
    """
    if is_plain_dir(folder) is False or is_plain_dir(os.path.dirname(folder)) is False:
        return ""  # a symlink (or no directory) in the state dir: never read through it
    try:
        state = loads(read_nofollow(os.path.join(folder, STATE_FILE)))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    covers = state.get("covers_ns")
    if newer_than_ns and (not isinstance(covers, int) or covers < newer_than_ns):
        return None
    if must_be_session_end and state.get("trigger") != "session_end":
        return None
    fresh = os.path.join(folder, CONTEXT_FILE)
    consumed = os.path.join(folder, CONSUMED_FILE)
    try:
        lock = lock_folder(folder)
    except OSError:
        return None
    try:
        if consume:
            try:
                os.rename(fresh, consumed)
            except OSError:
                pass  # handed back before: the consumed copy is the same text
        path = consumed if consume or not os.path.exists(fresh) else fresh
        try:
            return read_nofollow(path).decode("utf-8")
        except (OSError, ValueError):
            return None
    finally:
        os.close(lock)


def _handed_back_since_last_event(state_dir: str, folder: str, session_id: str) -> bool:
    """A SessionStart(compact) repeated with no new event (a PreCompact) since the last one."""
    from summarizer.resume.handback import REPEATED_COMPACT, read_log
    from summarizer.resume.spool_tail import newest_event_ns

    records = [r for r in read_log(folder) if r.get("reason") != REPEATED_COMPACT]
    last = records[-1] if records else None
    if not last or last.get("source") != "compact" or not last.get("injected"):
        return False
    stamp = last.get("ts_ns")
    newest = newest_event_ns(os.path.join(state_dir, "spool"), session_id)
    return isinstance(stamp, int) and newest <= stamp


def _clear_handoff(resume_dir: str, session_id: str) -> str:
    try:
        latest = loads(read_nofollow(os.path.join(resume_dir, LATEST_FILE)))
        other = latest["session_id"]
        fresh = time.time_ns() - int(latest["created_ns"]) <= CLEAR_HANDOFF_S * 1e9
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if fresh and latest.get("trigger") == "session_end" and _valid_id(other):
        return str(other) if other != session_id else ""
    return ""


def _build_within(state_dir: str, session_id: str, source: str, timeout_s: float) -> str:
    """Build the state in a thread; return its folder, or "" if not done within `timeout_s`.

    Only the caller claims (consumes) the result, so a build that finishes after the deadline
    leaves an unconsumed context for the next SessionStart instead of losing it.
    """
    import threading

    result: list[str] = []
    deadline = time.monotonic() + timeout_s

    def work() -> None:
        try:
            from summarizer.resume.build import build_for_session_start

            result.append(build_for_session_start(state_dir, session_id, source, deadline))
        except BaseException:
            result.append("")

    thread = threading.Thread(target=work, name="ctxd-resume-build", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    return result[0] if result and time.monotonic() <= deadline + 0.05 else ""


def _startup_text(state_dir: str) -> str:
    # Prebuilt within its token budget by summarizer.resume.startup whenever a session's
    # resume state is written; empty when nothing is open.
    context = os.path.join(state_dir, "context")
    if is_plain_dir(context) is not True:
        return ""  # missing, or a symlink in the state dir: never read through it
    try:
        return _cap(read_nofollow(os.path.join(context, STARTUP_FILE)).decode(), STARTUP_MAX_CHARS)
    except (OSError, ValueError):
        return ""


def _valid_id(value: object) -> bool:
    # The rule of indexer.paths.is_valid_session_id, without importing `re` on the hot path.
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and value[0] not in "._-"
        and all(c in _ID_CHARS for c in value)
    )


def _table(doc: dict[str, Any] | None, name: str) -> dict[str, Any]:
    value = doc.get(name) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def _cap(text: str, max_chars: int) -> str:
    """`text` within `max_chars` UTF-16 units (how Claude Code counts), cut at a line end."""
    if len(text) <= max_chars // 2 or _utf16_len(text) <= max_chars:
        return text
    units = 0
    end = len(text)
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > max_chars:
            end = i
            break
    cut = text[:end]
    line_end = cut.rfind("\n")
    return cut[:line_end] if line_end > max_chars // 2 else cut


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
