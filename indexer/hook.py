"""Stand-in for what earlier versions had here: the hook run as a script, and its plugin door."""

# Two callers of an earlier version still reach this module:
#   - hooks installed as `<python> -I -S …/indexer/hook.py` (or `-m indexer.hook`): run as a
#     script, it runs the hook's launcher, ctxd_hook/run_hook.py, as indexer/run_hook.py does;
#   - a copy of the Claude Code plugin of an earlier version, which hands the events it answers
#     to the installed ctxd as `from indexer.hook import respond` (`_prebuild` for plugin
#     0.1.0): these run the hook's own functions, loaded from ctxd_hook/ by path.
# Nothing of ctxd is imported: the indexer never depends on the hook, which sits above it.
# `ctxd init` installs the new path; `ctxd doctor` says when the old one is still in use.
import os
import sys

# What earlier versions installed as the hook (these stand-ins run them still): the launcher
# when it lived here, the hook run as a script, and the hook run as a module. `ctxd doctor`
# names them, `ctxd init` replaces them.
EARLIER_HOOK_MODULE = "indexer.hook"
EARLIER_HOOK_ENTRY_POINTS = ("indexer/run_hook.py", "indexer/hook.py", f"-m {EARLIER_HOOK_MODULE}")

_HERE = os.path.dirname(os.path.abspath(__file__))
_FOLDERS = (
    os.path.join(_HERE, os.pardir, "ctxd_hook"),  # installed: beside indexer/
    os.path.join(_HERE, os.pardir, "plugin", "ctxd_hook"),  # in a checkout
)


def respond(payload: bytes, base: str) -> None:
    """What an earlier plugin's delegate calls: the hook's answer to an event (never raises)."""
    try:
        import runpy  # only here: `ctxd doctor` imports this module for its constants

        runpy.run_path(_hook_file("hook.py"))["respond"](payload, base)
    except Exception:
        pass


def _prebuild(payload: bytes, base: str) -> None:
    """What plugin 0.1.0's delegate calls on PreCompact: the notes' build (never raises)."""
    try:
        import runpy

        runpy.run_path(_hook_file("answers.py"))["prebuild"](payload, base)
    except Exception:
        pass


def _hook_file(name: str) -> str:
    for folder in _FOLDERS:
        path = os.path.normpath(os.path.join(folder, name))
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"ctxd_hook/{name} is not installed beside {_HERE}")


if __name__ == "__main__":
    try:
        sys.path.append(os.path.dirname(_hook_file("hook.py")))
        import hook  # type: ignore[import-not-found]  # by its file name: cached bytecode

        hook.main()
    finally:
        os._exit(0)  # as the hook does: exit 0 always
