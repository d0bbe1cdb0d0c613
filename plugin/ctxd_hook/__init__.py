"""The hook process Claude Code and Codex run: one spool append, then the few answers.

The top of ctxd's import order: standard library only at module level (the hot path, run for
every tool call), and `indexer` and `summarizer` imported lazily by the events answered after
the append. `ctxd init` installs `<python> -I -S <site-packages>/ctxd_hook/run_hook.py`; the
Claude Code plugin runs this folder's copy (`${CLAUDE_PLUGIN_ROOT}/ctxd_hook/run_hook.py`).
"""
