"""Stand-in for the hook launcher earlier versions installed here: runs ctxd_hook/run_hook.py."""

# `ctxd init` of an earlier version installed `<python> -I -S …/indexer/run_hook.py` in the
# hooks of Claude Code and Codex. The hook has a package of its own now (ctxd_hook), which
# `ctxd init` installs instead and `ctxd doctor` asks for; until then this script keeps those
# hooks recording. It runs the launcher by its path and imports nothing of ctxd: the indexer
# never depends on the hook, which sits above it. Standard library only, as the hook.
import os
import runpy

_HERE = os.path.dirname(os.path.abspath(__file__))
_LAUNCHERS = (
    os.path.join(_HERE, os.pardir, "ctxd_hook", "run_hook.py"),  # installed: beside indexer/
    os.path.join(_HERE, os.pardir, "plugin", "ctxd_hook", "run_hook.py"),  # in a checkout
)

if __name__ == "__main__":
    try:
        for launcher in _LAUNCHERS:
            if os.path.isfile(launcher):
                runpy.run_path(os.path.normpath(launcher), run_name="__main__")
                break
    finally:
        os._exit(0)  # as the hook does: exit 0 always
