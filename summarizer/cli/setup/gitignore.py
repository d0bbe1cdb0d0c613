"""The .gitignore lines ctxd writes: the project's (its state, this machine's paths), .ctxd's."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ensure_gitignored", "ignore_in_git", "is_gitignored", "remove_gitignored"]


def is_gitignored(project_root: Path, entry: str) -> bool:
    """True if `<project_root>/.gitignore` has `entry` or an equivalent line."""
    path = project_root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    name = entry.strip("/")
    same = {name, f"{name}/", f"/{name}", f"/{name}/", f"**/{name}", f"**/{name}/"}
    return any(line.strip() in same for line in text.split("\n"))


def ensure_gitignored(project_root: Path, entry: str = ".ctxd/") -> bool:
    """Append `entry` to `<project_root>/.gitignore` unless an equivalent line is there."""
    if is_gitignored(project_root, entry):
        return False
    path = project_root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    with path.open("a", encoding="utf-8") as f:
        f.write(("" if not text or text.endswith("\n") else "\n") + entry + "\n")
    return True


def remove_gitignored(project_root: Path, entry: str) -> bool:
    """Take the line `entry` (as ensure_gitignored wrote it) out of `<project_root>/.gitignore`;
    True if it was there."""
    path = project_root / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except OSError:
        return False
    kept = [line for line in lines if line.strip() != entry]
    if kept == lines:
        return False
    path.write_text("".join(kept), encoding="utf-8")
    return True


# As the plugin's hook writes it (plugin/ctxd_hook/plugin.py: a copy, the hook imports only
# the standard library and its own folder; tests/ctxd_hook/test_copies.py checks they agree).
def ignore_in_git(base: str) -> None:
    """Put a `.gitignore` of `*` in the state dir: with the plugin, no `ctxd init` adds
    `.ctxd/` to the project's .gitignore, and captured sessions must not get committed."""
    try:
        fd = os.open(
            os.path.join(base, ".gitignore"),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:  # already there (or not writable: the spool write said so already)
        return
    try:
        os.write(fd, b"# written by ctxd: nothing in this folder belongs in git\n*\n")
    finally:
        os.close(fd)
