"""SessionStart hook output: the prebuilt resume context, injected once (stdlib fast path)."""

# Runs inside `ctxd-hook` on every SessionStart, so module-level imports are the standard
# library only; msgspec, sqlite3 and tiktoken are imported only by the build path, which runs
# when no prebuilt context exists. Every public function swallows errors: the hook must print
# valid hook output or nothing, and never fail the session (I1).

from __future__ import annotations

import os
import time

from indexer import safefs
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.resume import codex_handback
from summarizer.resume.fastjson import loads
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
from summarizer.resume.hook_output import cap, hook_output
from summarizer.resume.hook_settings import HookSettings, read_settings
from summarizer.resume.prebuilt import claim_context, take_context
from summarizer.resume.spawn import autostart, spawn_detached

# typing costs ~5 ms to import; this constant is the idiom type checkers understand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The hook script may import from this module only (its one door into summarizer), so the
# settings and the detached spawn it needs are re-exported here.
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
    "claim_context",
    "lock_folder",
    "plan_session_start",
    "read_settings",
    "record_compaction",
    "running_summary_text",
    "session_start_output",
    "spawn_detached",
    "take_context",
]

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def session_start_output(payload: bytes, state_dir: str, host: str = "") -> str:
    """The hook's stdout for a SessionStart payload: hook JSON, or "" (never raises).

    `host` is the client that runs the hook ("" Claude Code, "codex"). Every decision, to
    inject or not, is appended with its reason to the session's `resume/<session>/starts.jsonl`.
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
        os.close(safefs.open_dir(state_dir, folder))  # created by fds: no symlink followed
        # One decision at a time per session: a concurrent SessionStart sees this one's log.
        lock = lock_folder(folder, DECISION_LOCK)
        try:
            try:
                text, reason, origin = plan_session_start(
                    state_dir, event, settings, consume=True, host=host
                )
            finally:
                if settings.autostart:
                    autostart(state_dir)
            if host == codex_handback.HOST:
                text = codex_handback.cap_bytes(text)  # over Codex's limit it goes to a file
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


def record_compaction(payload: bytes, state_dir: str, ts_ns: int) -> None:
    """PreCompact: note in the session's resume folder that a compaction starts, with the
    stamp of its spooled event, so that the SessionStart(compact) that follows knows it is a
    new compaction whatever else the project writes meanwhile (never raises)."""
    try:
        event = loads(payload)
        if not isinstance(event, dict) or event.get("hook_event_name") != "PreCompact":
            return
        session_id = event.get("session_id")
        if not _valid_id(session_id) or not os.path.isdir(state_dir):
            return
        from summarizer.resume.handback import record_precompact

        record_precompact(os.path.join(state_dir, "resume", str(session_id)), ts_ns)
    except Exception:
        pass


def plan_session_start(
    state_dir: str,
    event: dict[str, Any],
    settings: HookSettings,
    *,
    consume: bool,
    build_timeout_s: float | None = None,
    host: str = "",
) -> tuple[str, str, str]:
    """(text to hand back, why, the session the notes describe) for one SessionStart.

    `consume` marks the prebuilt context as handed back; `ctxd resume --preview` passes False.
    `host` is the client the session runs in ("" Claude Code, "codex").
    """
    from summarizer.resume.handback import (
        REPEATED_COMPACT,
        decide,
        is_repeated_compaction,
        live_context,
        live_from_log,
        read_log,
    )
    from summarizer.resume.spool_tail import newest_event_ns

    session_id = str(event.get("session_id"))
    source = str(event.get("source") or "startup")
    folder = os.path.join(state_dir, "resume", session_id)
    live = None
    codex = host == codex_handback.HOST
    if source == "resume":
        transcript = event.get("transcript_path")
        live = codex_handback.live_context(transcript) if codex else live_context(transcript)
        if live is None:
            records = read_log(folder)
            live = live_from_log(records) if records else None
    go, why = decide(source, settings.inject_on, settings.inject_on_startup, live)
    # The spool's tail is read once per SessionStart: the repeat check and the notes' freshness
    # both need the session's newest event there.
    spool_newest: int | None = None
    if go and source == "compact":
        spool_newest = newest_event_ns(os.path.join(state_dir, "spool"), session_id)
        if is_repeated_compaction(folder, spool_newest):
            go, why = False, REPEATED_COMPACT
    if (
        go
        and codex
        and source == "resume"
        and codex_handback.compaction_just_ran(state_dir, session_id)
    ):
        go, why = False, codex_handback.COMPACT_FOLLOWS
    if not go:
        return "", why, ""
    if source == "startup":
        text = _startup_text(state_dir)
        if not text.strip():
            return "", why + "; nothing is open in this project", ""
        return text, why, ""
    timeout = settings.build_timeout_s if build_timeout_s is None else build_timeout_s
    text, origin, how = _notes(state_dir, session_id, source, timeout, consume, spool_newest)
    if not text.strip():
        return "", f"{why}; nothing could be handed back: {how}", origin
    return text, f"{why} ({how})", origin


# --- private ----------------------------------------------------------------------------


def _notes(
    state_dir: str,
    session_id: str,
    source: str,
    timeout_s: float,
    consume: bool,
    spool_newest: int | None = None,
) -> tuple[str, str, str]:
    """(notes, the session they describe, how they were obtained); `spool_newest` is the
    session's newest event in the spool's tail, if the caller has read it already."""
    from summarizer.resume.handback import last_precompact_ns
    from summarizer.resume.spool_tail import newest_event_ns

    resume_dir = os.path.join(state_dir, "resume")
    spool = os.path.join(state_dir, "spool")
    # The notes must cover the session's newest event: its PreCompact is known exactly; the
    # spool's tail may show a later one (or, in a busy project, none of this session).
    newest = max(
        newest_event_ns(spool, session_id) if spool_newest is None else spool_newest,
        last_precompact_ns(os.path.join(resume_dir, session_id)),
    )
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
    from indexer import lock_is_held

    folder = os.path.join(state_dir, "resume", session_id)
    deadline = time.monotonic() + wait_s
    while lock_is_held(os.path.join(state_dir, "daemon.lock")):
        text = take_context(folder, newer_than_ns=newest, consume=consume)
        if text is not None or time.monotonic() >= deadline:
            return text
        time.sleep(0.02)
    return take_context(folder, newer_than_ns=newest, consume=consume)


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
        return cap(read_nofollow(os.path.join(context, STARTUP_FILE)).decode(), STARTUP_MAX_CHARS)
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
