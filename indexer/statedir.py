"""Where the state directory is: $CTXD_HOME, else <project>/.ctxd (standard library only)."""

# indexer/paths.py resolves the state directory here, not through the hook: the hook's
# SessionStart branch imports the resume code, which imports paths (an import circle).
# The hook script keeps an identical copy, because run as `python -I -S .../hook.py` it
# may import nothing but the standard library; tests/test_layers.py checks the two match.

import os


def state_dir(environ: "os._Environ[str] | dict[str, str]", cwd: str) -> str:
    """Resolve the state directory: $CTXD_HOME, else <project>/.ctxd (ARCHITECTURE §4).

    project = $CLAUDE_PROJECT_DIR, else the git root above `cwd`, else `cwd`; but in a git
    repository, the nearest directory from there up to the repository's root that already has
    a `.ctxd`.
    """
    home = environ.get("CTXD_HOME", "")
    if home:
        return home
    project = environ.get("CLAUDE_PROJECT_DIR", "")
    path = project or cwd
    if os.path.lexists(os.path.join(path, ".ctxd")):  # the usual case: one stat
        return os.path.join(path, ".ctxd")
    # Claude Code started in a subdirectory of a repository runs the hooks of the root's
    # settings with $CLAUDE_PROJECT_DIR set to that subdirectory: its events belong to the
    # state directory `ctxd init` made higher up, not to a new one.
    root = git_root(path)
    while root and path != root:
        path = os.path.dirname(path)
        if os.path.lexists(os.path.join(path, ".ctxd")):
            return os.path.join(path, ".ctxd")
    return os.path.join(project or root or cwd, ".ctxd")


def git_root(cwd: str) -> str:
    path = cwd
    for _ in range(64):  # bounded: a pathological cwd must not cost more than a few stats
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return ""
        path = parent
    return ""
