"""`ctxd run`: the daemon in the foreground: config, log, signals, then the loop and its jobs."""

from __future__ import annotations

import argparse
import logging
import os

from indexer import Config, CtxdError, load_config
from summarizer.daemon.logfile import setup_logging
from summarizer.daemon.service import Daemon
from summarizer.daemon.wakeup import install_signal_handlers

__all__ = ["cmd_run"]

log = logging.getLogger("ctxd.daemon")


def cmd_run(args: argparse.Namespace) -> int:
    """Run the daemon in the foreground until SIGTERM or Ctrl-C."""
    from summarizer.common.cliargs import state_paths

    paths = state_paths(args)
    paths.ensure()
    try:
        config = load_config(paths.config)
    except CtxdError as e:  # `ctxd start` detaches the daemon from the terminal: log why
        setup_logging(paths, Config(), to_stderr=os.isatty(2))
        log.error("the daemon cannot start: %s", e)
        raise
    setup_logging(paths, config, to_stderr=os.isatty(2))
    daemon = Daemon(paths, config)
    install_signal_handlers(daemon)
    return daemon.run(on_start=_start_jobs)


def _start_jobs(daemon: Daemon) -> None:
    """Start the session listeners (todos, resume states, retention) and the scheduled jobs."""
    from summarizer.daemon.jobs import start_jobs
    from summarizer.daemon.session_jobs import attach

    attach(daemon)
    start_jobs(daemon)
