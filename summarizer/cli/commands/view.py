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
        "summarizer.cli.commands.view:cmd_view",
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
        help="where to write the page, readable by you only "
        "(default: <state dir>/pages/<session id>.html)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the web browser")


def cmd_view(args: argparse.Namespace) -> int:
    """Write the page, print its path, and open it with --open."""
    from indexer import CtxdError, history, load_config, write_atomic
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
        # The folder resolved, not the file: a symlink named with -o is refused, not followed.
        if (out.parent.resolve() / out.name).is_relative_to(paths.root.resolve()):
            write_atomic(out, html_text.encode("utf-8"), root=paths.root)  # by fds, no symlink
        else:  # a file the user named elsewhere with -o
            write_private(out, html_text.encode("utf-8"))
    except OSError as e:
        raise CtxdError(f"cannot write {out}: {e.strerror}; choose another file with -o") from e
    print(out)
    if args.open:
        import webbrowser

        if not webbrowser.open(out.resolve().as_uri()):
            raise CtxdError(f"no web browser found to open {out}; open the file by hand")
    return 0


def write_private(out: Path, data: bytes) -> None:
    """Replace `out` with `data` as a 0600 file, atomically; refuse a symlink or a non-file.

    The page holds the whole session, so it is as private as the state dir it comes from. The
    temporary file has an unpredictable name in the target's folder (mkstemp: O_EXCL, 0600),
    so no link planted under a guessable name is written through, and the rename swaps the
    finished page in whole. `out` is checked with lstat right before the rename: a symlink
    the user named would otherwise be silently replaced by a plain file.
    """
    import tempfile

    from indexer import CtxdError, safefs

    def refuse_unless_plain_file() -> None:
        kind = safefs.unplain_kind(out)
        if kind:
            raise CtxdError(
                f"{out} is {kind}: ctxd writes the page only to a plain file; name the real "
                "file (or a new one) with -o"
            )

    refuse_unless_plain_file()
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        refuse_unless_plain_file()  # again: the page took a while to write
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
