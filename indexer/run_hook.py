"""Stand-in for the hook launcher earlier versions installed here: runs ctxd_hook's hook."""

# `ctxd init` of an earlier version installed `<python> -I -S …/indexer/run_hook.py` in the
# hooks of Claude Code and Codex. The hook has a package of its own now (ctxd_hook), which
# `ctxd init` installs instead and `ctxd doctor` asks for; until then this script keeps those
# hooks recording, as fast as the launcher: it imports the hook by its file name from its
# folder (cached bytecode), as ctxd_hook/run_hook.py does, rather than through runpy, whose
# imports doubled an event's cost. The indexer itself never imports the hook, which sits above
# it. Standard library only, as the hook.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    try:
        for folder in (
            os.path.join(_HERE, os.pardir, "ctxd_hook"),  # installed: beside indexer/
            os.path.join(_HERE, os.pardir, "plugin", "ctxd_hook"),  # in a checkout
        ):
            if os.path.isfile(os.path.join(folder, "hook.py")):
                sys.path.append(os.path.normpath(folder))
                import hook  # type: ignore[import-not-found]

                hook.main()
                break
    finally:
        os._exit(0)  # as the hook does: exit 0 always
