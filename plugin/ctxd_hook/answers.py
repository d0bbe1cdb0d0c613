"""What the hook does after the append for the few events that are answered (stdlib only).

SessionStart prints the notes, PreCompact records the compaction and starts the notes' build,
the subagent events queue, print or close a handoff. The heavy lifting lives in `summarizer`,
imported only for these events; the hook imports this module by its file name (see
`hook._sibling`) only when `hook.answer_kind` names one of them.
"""

from __future__ import annotations

import os
import sys

_PRE_COMPACT_MARK = b'"hook_event_name":"PreCompact"'


def answer(payload: bytes, base: str, kind: str, spooled_ns: int, host: str) -> None:
    """Do what `kind` (hook.answer_kind) needs; `spooled_ns` is the stamp of the event's spool
    line (0: not spooled). Never raises."""
    if kind == "SessionStart":
        _session_start(payload, base, host)
    elif kind == "PreCompact":
        if spooled_ns:
            _record_compaction(payload, base, spooled_ns)  # before the build starts
        prebuild(payload, base)
    elif kind:
        _handoff(payload, base, kind)


def _session_start(payload: bytes, base: str, host: str = "") -> None:
    # Only SessionStart may print (its stdout becomes context). The heavy lifting lives in
    # summarizer.resume.hook, imported only for this event.
    try:
        _importable_summarizer()
        from summarizer.resume.hook import session_start_output

        text = session_start_output(payload, base, host)
    except Exception:
        return
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def _record_compaction(payload: bytes, base: str, ts_ns: int) -> None:
    # PreCompact, once spooled: the session's own record that a compaction starts (which the
    # SessionStart(compact) after it reads), written before the build is started.
    if _PRE_COMPACT_MARK not in payload[:4096].replace(b" ", b""):
        return
    try:
        _importable_summarizer(site_packages=False)  # the compaction waits: stdlib only
        from summarizer.resume.hook import record_compaction

        record_compaction(payload, base, ts_ns)
    except Exception:
        pass


def prebuild(payload: bytes, base: str) -> None:
    # PreCompact: the compaction takes seconds, so build the notes now. A running daemon does
    # it on its own; otherwise start a detached builder (stdio on /dev/null, its own session,
    # so Claude Code does not wait for it). Plugin 0.1.0 calls it by name in the installed
    # ctxd (through indexer/hook.py, kept for it), hence the check of the event.
    if _PRE_COMPACT_MARK not in payload[:4096].replace(b" ", b""):
        return
    try:
        _importable_summarizer()
        from indexer import lock_is_held
        from summarizer.resume.hook import read_settings, spawn_detached

        if not lock_is_held(os.path.join(base, "daemon.lock")) and read_settings(base).prebuild:
            spawn_detached(["summarizer.daemon.prebuild", base])
    except Exception:
        pass


def _handoff(payload: bytes, base: str, kind: str) -> None:
    # Subagents: SubagentStart prints the handoff queued for it (its stdout becomes the
    # subagent's context); an Agent call (PreToolUse) queues that handoff; SubagentStop of an
    # agent its call named writes the account of that run (no daemon needed, no process started).
    try:
        # Only the Agent call needs site-packages; SubagentStart, which the subagent waits
        # for, and the others are standard library only.
        _importable_summarizer(site_packages=kind == "AgentCall")
        import summarizer.handoff.hook as handoff

        if kind == "SubagentStart":
            text = handoff.subagent_start_output(payload, base)
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()
        elif kind == "AgentCall":
            handoff.agent_call(payload, base)
        elif kind == "AgentCallFailed":
            handoff.agent_call_failed(payload, base)
        elif kind == "SubagentStop":
            handoff.agent_stopped(payload, base)
    except Exception:
        pass


def _importable_summarizer(site_packages: bool = True) -> None:
    """Make `summarizer` and `indexer` importable from this script.

    `site_packages=False` when only standard-library modules of ctxd are needed: enabling
    site-packages costs more than the interpreter's own start.
    """
    if site_packages and "site" not in sys.modules:  # `python -I -S hook.py`: enable them
        import site

        site.main()
    # Installed, `summarizer` and `indexer` ship beside `ctxd_hook`; in a checkout they are
    # one folder up (ctxd_hook lives in plugin/). Run as a script, neither folder is on
    # sys.path (sys.path[0] is ctxd_hook/ itself, and -I leaves even that out).
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "summarizer")):
        root = os.path.dirname(root)
    if root not in sys.path:
        sys.path.append(root)
