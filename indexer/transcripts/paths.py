"""Where Claude Code keeps a project's transcripts, and which files of a folder to import."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import msgspec

from indexer.errors import TranscriptPathError
from indexer.statedir import git_root, state_dir

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
# Claude Code cuts longer folder names and appends a hash of the whole path.
_MAX_NAME = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def claude_dir(environ: Mapping[str, str]) -> Path:
    """Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(environ.get("HOME") or Path.home()) / ".claude"


def project_folder_name(project: str) -> str:
    """The folder name Claude Code gives a project: every non-alphanumeric character of its
    absolute path becomes "-" (`/home/u/my.app` -> `-home-u-my-app`, `C:\\w` -> `C--w`)."""
    # Claude Code's rule runs on JavaScript's UTF-16 string: a character beyond U+FFFF (an
    # emoji) is two code units there, so two dashes.
    name = _NOT_ALNUM.sub(_dashes, project)
    if len(name) <= _MAX_NAME:
        return name
    return f"{name[:_MAX_NAME]}-{_base36(abs(_string_hash(project)))}"


def _dashes(m: re.Match[str]) -> str:
    return "--" if ord(m.group()) > 0xFFFF else "-"


def _string_hash(text: str) -> int:
    """Java's String.hashCode, as Claude Code computes it: h = 31*h + unit over the UTF-16
    code units, in signed 32-bit arithmetic."""
    units = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] | units[i + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, digit = divmod(n, 36)
        digits = _BASE36[digit] + digits
        if n == 0:
            return digits


def project_dir(environ: Mapping[str, str], cwd: str) -> Path:
    """The current project's transcript folder under `<claude dir>/projects/`.

    The project is $CLAUDE_PROJECT_DIR, else the git root of `cwd`, else `cwd` (where
    Claude Code was started). A long name ends with a hash of the path; if no folder has that
    name, the only folder with the same first 200 characters is taken (another client's hash).
    """
    projects = claude_dir(environ) / "projects"
    name = project_folder_name(_project(environ, cwd))
    if len(name) > _MAX_NAME and not (projects / name).is_dir():
        try:
            matches = [p for p in projects.iterdir() if p.name.startswith(name[: _MAX_NAME + 1])]
        except OSError:
            matches = []
        if len(matches) == 1:  # two would be two projects: neither is surely this one
            return matches[0]
    return projects / name


def _project(environ: Mapping[str, str], cwd: str) -> str:
    """Where Claude Code was started: $CLAUDE_PROJECT_DIR, else the git root of `cwd`, else
    `cwd` (absolute)."""
    return os.path.abspath(environ.get("CLAUDE_PROJECT_DIR") or git_root(cwd) or cwd)


class _Started(msgspec.Struct):
    cwd: str = ""


_STARTED = msgspec.json.Decoder(_Started)
_HEAD_BYTES = 256 * 1024  # where a transcript's first records, and so its `cwd`, are


def subdirectory_dirs(environ: Mapping[str, str], cwd: str, state_root: Path) -> list[Path]:
    """The transcript folders of sessions Claude Code started in a subdirectory of the project
    (it names a folder after the directory it was started in) whose events belong to
    `state_root`, by the state directory rule applied to where each session started."""
    projects = claude_dir(environ) / "projects"
    own = project_dir(environ, cwd)
    # A long name is cut at 200 characters: a subdirectory's shares at most those.
    prefix = (project_folder_name(_project(environ, cwd)) + "-")[:_MAX_NAME]
    try:
        candidates = sorted(p for p in projects.iterdir() if p.name.startswith(prefix))
    except OSError:
        return []
    found = []
    for folder in candidates:
        if folder == own or folder.is_symlink() or not folder.is_dir():
            continue
        started = _started_in(folder)
        # `-a-proj-x` may be /a/proj/x or /a/proj-x: where the session ran decides.
        if started and os.path.abspath(state_dir({"CLAUDE_PROJECT_DIR": started}, started)) == (
            os.path.abspath(state_root)
        ):
            found.append(folder)
    return found


def _started_in(folder: Path) -> str:
    """The directory the sessions of a transcript folder ran in (the first `cwd` recorded in
    its transcripts' first lines), or "" if none says."""
    for transcript in sorted(folder.glob("*.jsonl")):
        try:
            with transcript.open("rb") as f:
                head = f.read(_HEAD_BYTES)
        except OSError:
            continue
        for line in head.split(b"\n")[:-1]:  # the last piece may be cut
            try:
                started = _STARTED.decode(line).cwd
            except msgspec.DecodeError:
                continue
            if started:
                return started
    return ""


def all_project_dirs(environ: Mapping[str, str]) -> list[Path]:
    """Every project folder under `<claude dir>/projects/`."""
    projects = claude_dir(environ) / "projects"
    try:
        return sorted(p for p in projects.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError as e:
        raise TranscriptPathError(
            f"cannot list {projects}: {e.strerror}; set CLAUDE_CONFIG_DIR if Claude Code keeps"
            " its data elsewhere"
        ) from e


def transcript_files(paths: list[Path], state_root: Path | None = None) -> list[Path]:
    """The `.jsonl` transcripts of `paths` (files as given, folders searched recursively,
    `subagents/agent-<id>.jsonl` included), each once, main sessions before their agents.

    ctxd's own files are never transcripts: a path in the state directory `state_root` is
    refused, and a folder that holds it is searched without it.
    """
    state = state_root.resolve() if state_root is not None else None
    found: dict[str, Path] = {}
    for given in paths:
        if not given.exists():
            raise TranscriptPathError(f"{given} does not exist; give a transcript file or folder")
        path = given.resolve()  # a path given (or its folder) may be a link; links inside are not
        if state is not None and (path == state or state in path.parents):
            raise TranscriptPathError(
                f"{given} is in ctxd's state directory ({state}), which holds what ctxd "
                "recorded, not transcripts; give Claude Code transcript files or folders"
            )
        if path.is_file():
            found.setdefault(str(path), path)
            continue
        for root, dirs, files in os.walk(path):  # os.walk does not follow symlinks
            # Spilled outputs are not records; the state directory is ctxd's own.
            dirs[:] = [
                d for d in dirs if d != "tool-results" and (state is None or Path(root, d) != state)
            ]
            for name in files:
                if name.endswith(".jsonl"):
                    full = Path(root, name).absolute()
                    if not full.is_symlink():
                        found.setdefault(str(full), full)
    return sorted(found.values(), key=lambda p: ("subagents" in p.parts, str(p)))


def codex_home(environ: Mapping[str, str]) -> Path:
    """Codex CLI's home folder (its hooks, config and rollouts): $CODEX_HOME, else ~/.codex."""
    home = environ.get("CODEX_HOME", "")
    return Path(os.path.abspath(home)) if home else Path.home() / ".codex"
