"""The handoff queue of a session: one marker per Agent call, claimed by the subagent that starts.

`SubagentStart` names only Claude Code's agent id and type, not the call that started it, so
the pairing is the one the index uses: the oldest unclaimed call of the same agent type. Every
Agent call leaves a marker (empty when there is nothing to hand over) so that a call naming
nothing still takes its place in the queue. Claiming is an atomic rename, so two subagents
starting at once never take the same marker. Standard library only: SubagentStart runs it.
"""

from __future__ import annotations

import os
import time

from summarizer.common.nofollow import read_nofollow
from summarizer.resume.fastjson import encode_string, loads

__all__ = [
    "ACCOUNTS_DIR",
    "HANDOFF_DIR",
    "claim",
    "claimed_by",
    "drop",
    "is_safe_name",
    "put",
    "read_under",
    "write_account",
]

HANDOFF_DIR = "handoff"
_SESSIONS_DIR = "sessions"  # handoff/sessions/<session_id>/: the queue of each session
ACCOUNTS_DIR = "agents"  # handoff/agents/<agent_id>.md: the account of each named agent's last run
# A call that never started a subagent (denied, interrupted) must not be claimed by a later
# one: markers older than this are dropped. Claude Code starts a subagent right after its call.
STALE_NS = 300 * 1_000_000_000
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def is_safe_name(name: str) -> bool:
    """True if `name` can be a path part: [A-Za-z0-9._-], 1-128 long, not starting with '.'."""
    return 0 < len(name) <= 128 and not name.startswith(".") and set(name) <= _SAFE


def put(
    base: str,
    session_id: str,
    agent_type: str,
    tool_use_id: str,
    text: str,
    name: str = "",
    instruction: str = "",
) -> None:
    """Queue the handoff of one Agent call (written atomically, 0600, no symlink followed).

    `name` is the agent's `AgentId:` (if the call names it) and `instruction` its prompt: kept
    so that the hook can write the agent's account when this run ends.
    """
    if not is_safe_name(session_id):
        return
    fd = _open_dir(base, (HANDOFF_DIR, _SESSIONS_DIR, session_id), create=True)
    try:
        now = time.time_ns()
        body = (
            '{"type_key":'
            + encode_string(_key(agent_type.lower()))
            + ',"call_key":'
            + encode_string(_key(tool_use_id))
            + ',"name":'
            + encode_string(name)
            + ',"instruction":'
            + encode_string(instruction)
            + ',"text":'
            + encode_string(text)
            + "}"
        ).encode("utf-8", "replace")
        _write(fd, f"p-{now:020d}-{os.getpid()}.json", body)
        _sweep(fd, now)
    finally:
        os.close(fd)


def claim(base: str, session_id: str, agent_type: str, cc_agent_id: str) -> str:
    """The handoff text for a subagent starting now ("" if none); its marker is consumed."""
    if not is_safe_name(session_id):
        return ""
    try:
        fd = _open_dir(base, (HANDOFF_DIR, _SESSIONS_DIR, session_id), create=False)
    except OSError:
        return ""
    try:
        now = time.time_ns()
        wanted = _key(agent_type.lower()) if agent_type else ""
        for name in sorted(n for n in os.listdir(fd) if n.startswith("p-")):
            stamp = _stamp(name)
            if now - stamp > STALE_NS:
                _unlink(fd, name)
                continue
            try:
                marker = loads(read_nofollow(name, dir_fd=fd))
            except (OSError, ValueError):
                continue
            if wanted and str(marker.get("type_key", "")) != wanted:
                continue
            tag = cc_agent_id if is_safe_name(cc_agent_id) else "agent"
            kind = "n" if marker.get("name") else "c"
            claimed = f"{kind}-{stamp:020d}-{tag}.json"
            try:
                os.rename(name, claimed, src_dir_fd=fd, dst_dir_fd=fd)
            except FileNotFoundError:
                continue  # a subagent starting at the same time took it
            return str(marker.get("text", ""))
        return ""
    finally:
        os.close(fd)


def drop(base: str, session_id: str, tool_use_id: str) -> None:
    """Remove the unclaimed marker of an Agent call that failed or was denied before its
    subagent started, so that no later subagent takes it."""
    if not (is_safe_name(session_id) and tool_use_id):
        return
    try:
        fd = _open_dir(base, (HANDOFF_DIR, _SESSIONS_DIR, session_id), create=False)
    except OSError:
        return
    try:
        call_key = _key(tool_use_id)
        for name in os.listdir(fd):
            if not name.startswith("p-"):
                continue
            try:
                marker = loads(read_nofollow(name, dir_fd=fd))
            except (OSError, ValueError):
                continue
            if isinstance(marker, dict) and marker.get("call_key") == call_key:
                _unlink(fd, name)
    finally:
        os.close(fd)


def claimed_by(base: str, session_id: str, cc_agent_id: str) -> dict[str, object] | None:
    """The marker the subagent `cc_agent_id` claimed, if its call named the agent."""
    if not (is_safe_name(session_id) and is_safe_name(cc_agent_id)):
        return None
    try:
        fd = _open_dir(base, (HANDOFF_DIR, _SESSIONS_DIR, session_id), create=False)
    except OSError:
        return None
    try:
        suffix = f"-{cc_agent_id}.json"
        for name in os.listdir(fd):
            if name.startswith("n-") and name.endswith(suffix):
                marker = loads(read_nofollow(name, dir_fd=fd))
                if not isinstance(marker, dict):
                    return None
                marker["called_ns"] = _stamp(name)  # when the Agent call queued it
                return marker
        return None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def read_under(base: str, *parts: str) -> bytes:
    """The bytes of base/parts…/name, no symlink followed on the way (OSError if one is met)."""
    fd = _open_dir(base, parts[:-1], create=False)
    try:
        return read_nofollow(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


def write_account(base: str, agent_id: str, text: str, run_started_ns: int = 0) -> None:
    """Write handoff/agents/<agent_id>.md atomically (0600, no symlink followed).

    Not when the file is newer than `run_started_ns`: the daemon already wrote the fuller
    account of this very run (it may index the run's end before this hook gets here).
    """
    if not is_safe_name(agent_id):
        return
    fd = _open_dir(base, (HANDOFF_DIR, ACCOUNTS_DIR), create=True)
    try:
        try:
            if (
                os.stat(f"{agent_id}.md", dir_fd=fd, follow_symlinks=False).st_mtime_ns
                > run_started_ns
            ):
                return
        except FileNotFoundError:
            pass
        _write(fd, f"{agent_id}.md", text.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def _write(fd: int, name: str, data: bytes) -> None:
    tmp = f".{name}.{os.getpid()}.tmp"
    out = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
    )
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    finally:
        os.close(out)
    os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)


def _open_dir(base: str, parts: tuple[str, ...], create: bool) -> int:
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _key(value: str) -> str:
    """What a marker keeps of the call's subagent type and id: a digest, only ever compared.
    Both are text the model writes, so either may carry a secret, which nothing under the
    state directory but the spool may keep."""
    import hashlib  # here: only the Agent call and SubagentStart pay for it

    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _stamp(name: str) -> int:
    try:
        return int(name.split("-")[1])
    except (IndexError, ValueError):
        return 0


def _unlink(fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        pass


def _sweep(fd: int, now: int) -> None:
    """Drop claimed and stale markers older than the stale age (they are only a trace)."""
    for name in os.listdir(fd):
        if name[:2] in ("c-", "n-", "p-") and now - _stamp(name) > STALE_NS:
            _unlink(fd, name)
