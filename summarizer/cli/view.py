"""`ctxd view SESSION`: write the session as one self-contained HTML page, and open it if asked."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cmd_view", "register"]

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]


def register(add: AddCommand) -> None:
    """Add `view` to the `ctxd` parser."""
    p = add(
        "view",
        "summarizer.cli.view:cmd_view",
        "write a session as one HTML page: a timeline with a lane per agent, failures and "
        "their fixes, compactions, tasks and memory",
    )
    p.add_argument(
        "session",
        help="session id, a unique prefix of it, or its start stamp YYYY-MM-DD-HH-MM-SS (UTC)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write the page (default: <state dir>/pages/<session id>.html)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the web browser")


def cmd_view(args: argparse.Namespace) -> int:
    """Write the page, print its path, and open it with --open."""
    from indexer import history, write_atomic
    from indexer.config import load_config
    from indexer.errors import CtxdError
    from summarizer.common.cliargs import state_paths
    from summarizer.daemon.session_jobs import catch_up_sessions
    from summarizer.resume.sessions import resolve_session
    from summarizer.view.build import page_data
    from summarizer.view.page import render_page

    paths = state_paths(args)
    if not paths.index_db.exists() and not paths.spool.is_dir():
        raise CtxdError(
            f"no ctxd state in {paths.root}: run it inside a project where ctxd is installed "
            "(`ctxd init`), or pass --state-dir"
        )
    catch_up_sessions(paths, load_config(paths.config))
    if not paths.index_db.exists():
        raise CtxdError(f"no sessions recorded yet in {paths.root}")
    conn = history.connect(paths.index_db, readonly=True)
    try:
        info = resolve_session(conn, args.session)
        html_text = render_page(page_data(conn, paths, info))
    finally:
        conn.close()
    out = Path(args.output) if args.output else paths.root / "pages" / f"{info.session_id}.html"
    try:
        if out.resolve().is_relative_to(paths.root.resolve()):
            write_atomic(out, html_text.encode("utf-8"), root=paths.root)  # by fds, no symlink
        else:  # a file the user named elsewhere with -o
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
            tmp.write_bytes(html_text.encode("utf-8"))
            os.replace(tmp, out)
    except OSError as e:
        raise CtxdError(f"cannot write {out}: {e.strerror}; choose another file with -o") from e
    print(out)
    if args.open:
        import webbrowser

        if not webbrowser.open(out.resolve().as_uri()):
            raise CtxdError(f"no web browser found to open {out}; open the file by hand")
    return 0
