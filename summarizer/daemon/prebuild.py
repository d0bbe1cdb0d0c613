"""Detached builder the hook starts on PreCompact when no daemon runs: index, write the notes."""

# Claude Code's compaction takes seconds; building the resume state meanwhile lets
# SessionStart(compact) hand back the prebuilt notes instead of building them itself. With a
# daemon running this is the daemon's job (it reacts to PreCompact at once), so the hook
# starts this only when the daemon lock is free. Errors end the process quietly: the
# SessionStart hook still builds on its own (I12).

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """`python -m summarizer.daemon.prebuild STATE_DIR`: catch up index and trigger states."""
    if len(argv) != 1:
        return 2
    from indexer import StatePaths
    from summarizer.daemon.session_jobs import catch_up_sessions

    try:
        catch_up_sessions(StatePaths(Path(argv[0])))
    except Exception:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
