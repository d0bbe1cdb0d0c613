"""Who ships: the machine id kept in the state directory, the project, the user and host."""

from __future__ import annotations

import getpass
import os
import re
import socket
import subprocess
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path

from indexer import Config, StateDirError, StatePaths, safefs
from summarizer.team.errors import TeamError, TeamNotConfiguredError

__all__ = [
    "Identity",
    "TeamSettings",
    "identity",
    "machine_id",
    "normalize_remote",
    "project_name",
    "require_dsn",
    "settings",
]

TEAM_DIR = "team"
MACHINE_FILE = "machine_id"
_MACHINE_ID = re.compile(r"[0-9a-f]{32}")
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.*)$")
ENV_DSN = "CTXD_TEAM_DSN"


@dataclass(frozen=True)
class TeamSettings:
    """The team store's settings once the environment has had its say."""

    dsn: str  # "" = shipping off
    config: Config

    @property
    def enabled(self) -> bool:
        return bool(self.dsn)


@dataclass(frozen=True)
class Identity:
    """What every row this machine ships carries."""

    machine_id: str
    project: str
    user: str
    host: str


def settings(config: Config, environ: dict[str, str] | None = None) -> TeamSettings:
    """The DSN: CTXD_TEAM_DSN when set (an empty value turns shipping off), else `[team] dsn`."""
    env = os.environ if environ is None else environ
    dsn = env.get(ENV_DSN, config.team.dsn)
    return TeamSettings(dsn.strip(), config)


def require_dsn(config: Config, environ: dict[str, str] | None = None) -> str:
    """The team database's DSN; TeamNotConfiguredError says how to set one."""
    team = settings(config, environ)
    if not team.enabled:
        raise TeamNotConfiguredError(
            "no team database: set [team] dsn in .ctxd/config.toml (or CTXD_TEAM_DSN), e.g. "
            '"postgresql://ctxd@db.example.com/ctxd?sslmode=verify-full"'
        )
    return team.dsn


def identity(paths: StatePaths, config: Config) -> Identity:
    """This state directory's machine id, project, user and host."""
    return Identity(
        machine_id=machine_id(paths),
        project=project_name(paths, config),
        user=config.team.user or _login_name(),
        host=socket.gethostname() or "unknown-host",
    )


def machine_id(paths: StatePaths) -> str:
    """The id of this machine's rows: 32 hex digits, generated once and kept in
    `<state dir>/team/machine_id` (two processes creating it at once agree on one)."""
    paths.ensure()
    try:
        fd = safefs.open_dir(paths.root, paths.root / TEAM_DIR)
    except (OSError, StateDirError) as e:
        raise TeamError(f"cannot open {paths.root / TEAM_DIR}: {e}") from e
    try:
        found = _read_id(fd)
        if found:
            return found
        fresh = uuid.uuid4().hex
        temp = f".{MACHINE_FILE}.{fresh}.tmp"
        tfd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
        try:
            os.write(tfd, fresh.encode() + b"\n")
            os.fsync(tfd)
        finally:
            os.close(tfd)
        try:
            # link() never replaces: the first creator wins, a later one reads its id.
            os.link(temp, MACHINE_FILE, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        except FileExistsError:
            pass
        finally:
            os.unlink(temp, dir_fd=fd)
        os.fsync(fd)
        found = _read_id(fd)
        if not found:
            raise TeamError(f"{paths.root / TEAM_DIR / MACHINE_FILE} is not a machine id")
        return found
    finally:
        os.close(fd)


def _read_id(dir_fd: int) -> str:
    try:
        fd = os.open(MACHINE_FILE, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return ""
    try:
        text = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not _MACHINE_ID.fullmatch(text):
        raise TeamError(
            f"the machine id file {TEAM_DIR}/{MACHINE_FILE} holds {text[:40]!r}, not 32 hex "
            "digits; delete it to get a new id (this machine's rows then ship again under it)"
        )
    return text


def project_name(paths: StatePaths, config: Config) -> str:
    """`[team] project`, else the normalized URL of the repository's origin, else the
    project folder's name."""
    if config.team.project.strip():
        return config.team.project.strip()
    folder = paths.root.parent if paths.root.name == ".ctxd" else paths.root
    url = _origin_url(folder)
    return normalize_remote(url) if url else folder.name or "project"


def normalize_remote(url: str) -> str:
    """A remote URL as `host/owner/repo`: no scheme, user, password, port or `.git`,
    lowercase, so that `git@github.com:Org/App.git` and `https://github.com/org/app` agree."""
    url = url.strip()
    scp = _SCP_LIKE.match(url) if "://" not in url else None
    if scp:
        host, path = scp.group(1), scp.group(2)
    elif "://" in url:
        parts = urllib.parse.urlsplit(url)
        host, path = parts.hostname or "", parts.path
    else:  # a local path used as a remote
        host, path = "", url
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return "/".join(p for p in (host, path) if p).lower()


def _origin_url(folder: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return f"uid{os.getuid()}"
