"""The hook's entry script (`ctxd init` installs it, the plugin runs it): the hook from bytecode."""

# A script is compiled from source on every run, and the hook's 370 lines took ~1.7 ms of
# the ~9 ms an event costs; a module imported from it is compiled once into __pycache__.
# -I leaves this folder off sys.path: it is appended (the standard library stays first), and
# `hook` is imported by the name of its file, which reuses ctxd_hook.hook's cached bytecode.
import os
import sys

if os.environ.get("CLAUDE_PLUGIN_ROOT"):
    # Run by the Claude Code plugin, from Claude Code's copy of it: that folder is Claude
    # Code's to remove, so the bytecode goes to the user's cache folder instead.
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    sys.pycache_prefix = os.path.join(cache, "ctxd", "pycache")
sys.path.append(os.path.dirname(__file__))
import hook  # type: ignore[import-not-found]

sys.path.pop()  # the rest of ctxd_hook/ is not made importable as top-level modules

try:
    hook.main()
finally:
    os._exit(0)  # as `python ctxd_hook/hook.py` does: no interpreter teardown, exit 0 always
