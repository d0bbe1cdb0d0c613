"""State-directory layout and the id checks that guard every path built from event data (I10)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from indexer.errors import InvalidIdError, StateDirError
from indexer.lost_events import prepare_counter
from indexer.safefs import open_dir
from indexer.statedir import state_dir as _resolve_state_dir

# Session ids are UUIDs in Claude Code; ctxd also accepts the short, readable ids that tests
# and orchestrators use. Dots are allowed inside but an id may not start with one, so "." and
# ".." and hidden names are impossible; "/" and "\\" never pass.
_SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_AGENT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}[A-Za-z0-9]")

# Names the state directory uses for itself, at its top, in sessions/ and resume/: an id equal to
# one of them (compared case-insensitively, for case-insensitive file systems) would make a
# session directory or a view file collide with ctxd's own file. Ids are refused, not mapped,
# so that the index and the file tree always name the same thing.
RESERVED_NAMES = frozenset(
    {
        "agent-instructions.jsonl",
        "all-agent-instructions.jsonl",
        "todos.json",
        "main.jsonl",
        "spool",
        "sessions",
        "context",
        "resume",
        "index.db",
        "index.db-wal",
        "index.db-shm",
        "index.db-journal",
        "daemon.lock",
        "daemon.json",
        "ctxd.log",
        "config.toml",
        "hook-failures",
        "autostart.lock",
        "compact.request",  # an earlier version's request file
        "daemon.sock",
        "latest.json",
        "views.rebuild",
        "views.new",
        "views.old",
    }
)
# Agent ids name `<agent_id>.jsonl` view files; these are the session directory's own files
# (besides "main", the orchestrator's view, which is valid as a view name only).
RESERVED_VIEW_NAMES = frozenset({"agent-instructions", "all-agent-instructions", "todos"})

DIR_MODE = 0o700
FILE_MODE = 0o600


def is_valid_session_id(session_id: str) -> bool:
    """True if `session_id` can safely name a directory (and is none of ctxd's own names)."""
    return (
        _SESSION_ID_RE.fullmatch(session_id) is not None
        and session_id.lower() not in RESERVED_NAMES
    )


def is_valid_view_name(agent_id: str) -> bool:
    """True if `agent_id` can safely name a view file (seed 000 agent-id rule, plus "main")."""
    return (
        _AGENT_ID_RE.fullmatch(agent_id) is not None and agent_id.lower() not in RESERVED_VIEW_NAMES
    )


def check_session_id(session_id: str) -> str:
    """Return `session_id` or raise InvalidIdError."""
    if not is_valid_session_id(session_id):
        raise InvalidIdError(
            f"invalid session id {session_id[:80]!r}: use letters, digits, '.', '_' or '-' "
            "(1-128 characters, not starting with '.', not a name ctxd uses for its own files)"
        )
    return session_id


class StatePaths:
    """Every path ctxd uses under one state directory.

    A plain class, not a dataclass: `dataclasses` imports `inspect`, which the fast read and
    hook paths should not pay for.
    """

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StatePaths) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"StatePaths({self.root!r})"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def index_db(self) -> Path:
        return self.root / "index.db"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def context(self) -> Path:
        return self.root / "context"

    @property
    def resume(self) -> Path:
        return self.root / "resume"

    @property
    def lock(self) -> Path:
        return self.root / "daemon.lock"

    @property
    def daemon_json(self) -> Path:
        return self.root / "daemon.json"

    @property
    def log(self) -> Path:
        return self.root / "ctxd.log"

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    def session_dir(self, session_id: str) -> Path:
        """The view directory of one session (validated id)."""
        return self.sessions / check_session_id(session_id)

    def ensure(self) -> None:
        """Create the state directory tree with private permissions, and the counter of hook
        events that could not be spooled with room kept for it on a full disk."""
        for path in (self.root, self.spool, self.sessions, self.context, self.resume):
            ensure_private_dir(path, self.root)
        prepare_counter(str(self.root))


def ensure_private_dir(path: Path, root: Path | None = None) -> None:
    """mkdir -p with 0700, walked by directory fds from the state dir `root` (`path` itself if
    None), refusing a symlink at any step below it (indexer.safefs)."""
    try:
        os.close(open_dir(root if root is not None else path, path))
    except StateDirError:
        raise
    except OSError as e:
        raise StateDirError(f"cannot create {path}: {e.strerror}; check its permissions") from e


def resolve_state_paths(explicit: str | None = None, cwd: str | None = None) -> StatePaths:
    """The state paths for `explicit` (a state dir), else by the hook's rule (ARCHITECTURE §4)."""
    if explicit:
        return StatePaths(Path(explicit).absolute())
    return StatePaths(Path(_resolve_state_dir(os.environ, cwd or os.getcwd())).absolute())
