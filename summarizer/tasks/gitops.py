"""Git plumbing for worktree snapshots; the user's index and worktree are only ever read."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from summarizer.tasks.errors import GitError

# GIT_OPTIONAL_LOCKS=0: `git status` must not refresh (write) the user's index behind its back.
_BASE_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


def git(
    repo: Path,
    args: Sequence[str],
    *,
    index_file: Path | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run git in `repo` (optionally on a scratch index); GitError with its stderr on failure."""
    env = {**os.environ, **_BASE_ENV}
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    try:
        result = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=repo,
            env=env,
            input=input_bytes,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError as e:
        raise GitError("git is not installed or not on PATH") from e
    if check and result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(
            f"git {' '.join(args[:2])} failed in {repo}: {message[0] if message else 'no output'}"
        )
    return result


def repo_root(cwd: Path) -> Path:
    """The top of the git worktree containing `cwd`; GitError saying how to name one if none."""
    if not cwd.is_dir():  # else git's start fails as if git itself were missing
        raise GitError(f"{cwd} is not a directory: pass --repo DIR with your repository")
    result = git(cwd, ["rev-parse", "--show-toplevel"], check=False)
    if result.returncode != 0:
        raise GitError(
            f"{cwd} is not inside a git repository: run the command in your repository, "
            "or pass --repo DIR"
        )
    return Path(result.stdout.decode().strip())


def rev_parse(repo: Path, rev: str) -> str:
    """The commit `rev` names; GitError saying so when it names none (no commit yet, a typo)."""
    result = git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], check=False)
    if result.returncode != 0:
        raise GitError(
            f"{rev!r} is not a commit in {repo}: make a first commit, or name an existing one "
            "(--base-commit)"
        )
    return result.stdout.decode().strip()


def head(repo: Path) -> str:
    return rev_parse(repo, "HEAD")


def tree_of(repo: Path, commit: str) -> str:
    return git(repo, ["rev-parse", f"{commit}^{{tree}}"]).stdout.decode().strip()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return git(repo, ["merge-base", "--is-ancestor", older, newer], check=False).returncode == 0


def hash_object(repo: Path, path: Path) -> str:
    """git's blob id of a file (the `git hash-object` of the task file, for provenance)."""
    return git(repo, ["hash-object", "--", str(path)]).stdout.decode().strip()


def status_porcelain(repo: Path, exclude: Sequence[str]) -> str:
    """Raw `git status --porcelain -z` (renames, modes, staged-only edits), read-only."""
    args = ["status", "--porcelain", "-z", "--untracked-files=all", "--", "."]
    out = git(repo, [*args, *(f":(exclude){p}" for p in exclude)]).stdout
    return out.decode("utf-8", "surrogateescape")


@contextmanager
def scratch_index(repo: Path) -> Iterator[Path]:
    """A private copy of the repository's index (its stat cache makes `add -A` fast)."""
    src = Path(git(repo, ["rev-parse", "--git-path", "index"]).stdout.decode().strip())
    if not src.is_absolute():
        src = repo / src
    with tempfile.TemporaryDirectory(prefix="ctxd-index-") as tmp:
        index = Path(tmp) / "index"
        if src.is_file():
            shutil.copyfile(src, index)
        yield index


def worktree_tree(repo: Path, exclude: Sequence[str]) -> str:
    """The tree object of the working tree as it is now, untracked files included, built in a
    scratch index so the user's index and files are untouched; `exclude` (paths relative to
    the repository) stays as HEAD has it."""
    # `git add` exits 1 ("The following paths are ignored…") when an exclude pathspec names an
    # ignored path, as `.ctxd/` is once `ctxd init` added it to .gitignore. An ignored path
    # needs no exclusion from `add -A` anyway; what git tracks inside it (a team's committed
    # config) is put back as HEAD has it, like the rest of `exclude`.
    named = [p for p in exclude if not is_ignored(repo, p)]
    with scratch_index(repo) as index:
        pathspec = [".", *(f":(exclude){p}" for p in named)]
        git(repo, ["add", "-A", "--", *pathspec], index_file=index)
        if exclude:
            git(repo, ["reset", "-q", "HEAD", "--", *exclude], index_file=index)
        return git(repo, ["write-tree"], index_file=index).stdout.decode().strip()


def is_ignored(repo: Path, path: str) -> bool:
    """True if a rule of git ignores `path` (or a folder above it), whether or not it tracks
    files inside: only the rules decide whether `add` complains."""
    return git(repo, ["check-ignore", "-q", "--no-index", "--", path], check=False).returncode == 0


def diff_trees(repo: Path, old: str, new: str) -> bytes:
    """The full binary diff between two trees (or commits)."""
    args = ["diff", "--binary", "--no-color", "--no-ext-diff", "--no-renames", old, new]
    return git(repo, args).stdout


def name_status(repo: Path, old: str, new: str) -> list[tuple[str, str]]:
    """(status letter, path) of every path that differs between two trees, sorted by path."""
    out = git(repo, ["diff", "--name-status", "-z", "--no-renames", old, new]).stdout
    parts = out.decode("utf-8", "surrogateescape").split("\0")
    pairs = [(parts[i][:1], parts[i + 1]) for i in range(0, len(parts) - 1, 2) if parts[i]]
    return sorted(pairs, key=lambda p: p[1])


def numstat(repo: Path, old: str, new: str) -> str:
    """`+added -deleted (N files)` between two trees."""
    out = git(repo, ["diff", "--numstat", "-z", "--no-renames", old, new]).stdout.decode(
        "utf-8", "surrogateescape"
    )
    added = deleted = files = 0
    for record in out.split("\0"):
        fields = record.split("\t")
        if len(fields) < 3:
            continue
        files += 1
        added += int(fields[0]) if fields[0].isdigit() else 0
        deleted += int(fields[1]) if fields[1].isdigit() else 0
    return f"+{added} -{deleted} ({files} files)"


def reverse_apply(repo: Path, tree: str, patch: bytes) -> tuple[str | None, str]:
    """Reverse-apply `patch` to `tree` in a scratch index: (resulting tree, "") or (None, git's
    conflict details). Only the scratch index changes; never the worktree.

    -C0: the patch's context lines need not match, so a later edit next to an earlier one is
    not a conflict; a later edit of the same lines is.
    """
    with tempfile.TemporaryDirectory(prefix="ctxd-apply-") as tmp:
        index, patch_file = Path(tmp) / "index", Path(tmp) / "patch.diff"
        patch_file.write_bytes(patch)
        git(repo, ["read-tree", tree], index_file=index)
        if not patch.strip():
            return tree, ""
        for check in (["--check"], []):
            args = ["apply", "--cached", "--reverse", "--binary", "-C0", *check, str(patch_file)]
            result = git(repo, args, index_file=index, check=False)
            if result.returncode != 0:
                return None, result.stderr.decode("utf-8", "replace").strip()
        return git(repo, ["write-tree"], index_file=index).stdout.decode().strip(), ""
