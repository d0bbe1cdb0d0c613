"""The daemon's side of the request channel: one thread blocked in accept(), handlers by name.

Clients connect to `daemon.sock` (see indexer.daemon.protocol) and send one request, a JSON
object with an "op". `ping` is answered here with the daemon's pid; any other op goes to the
handler registered under its name, which answers through `Reply` when it is done (the
compaction handler only after the compaction it waits for). A connection closed without a
request is a client asking whether a daemon runs. Nothing here wakes unless a client comes.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from indexer import daemon_channel

log = logging.getLogger("ctxd.channel")

# A client sends its request right after connecting; one that does not is dropped.
READ_TIMEOUT_S = 2.0
SEND_TIMEOUT_S = 5.0


class Reply:
    """Answers one request, once, from any thread; a client that has gone is no error."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._sent = False

    def send(self, message: dict[str, Any]) -> None:
        """Send `message` and close the connection (later calls do nothing)."""
        with self._lock:
            if self._sent:
                return
            self._sent = True
        try:
            self._conn.settimeout(SEND_TIMEOUT_S)
            daemon_channel.send(self._conn, message)
        except OSError:
            pass  # the client gave up waiting
        finally:
            self._conn.close()


RequestHandler = Callable[[dict[str, Any], Reply], None]


class RequestServer:
    """Accepts requests on the daemon's listening socket until `stop`."""

    def __init__(
        self,
        listener: daemon_channel.Listener,
        handlers: dict[str, RequestHandler],
        identity: dict[str, Any],
    ) -> None:
        self.listener = listener
        self.handlers = handlers
        self.identity = identity  # what `ping` answers besides "ok" (the daemon's pid)
        self.served = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve in a thread of its own from now on (requests queued meanwhile included)."""
        self._thread = threading.Thread(target=self._serve, name="ctxd-requests", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting (shutdown() wakes the blocked accept()) and wait for the thread."""
        self._stopping.set()
        try:
            self.listener.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=READ_TIMEOUT_S + 1)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self.listener.sock.accept()
            except OSError as e:
                if self._stopping.is_set():
                    return
                # EMFILE and the like: say so, then wait a moment instead of spinning on it.
                log.error("cannot accept a request: %s; retrying in a second", e)
                self._stopping.wait(1.0)
                continue
            try:
                self._handle(conn)
            except Exception:
                log.exception("a request failed")
                conn.close()

    def _handle(self, conn: socket.socket) -> None:
        if not _same_user(conn):  # the state dir is 0700: only root could get here
            conn.close()
            return
        try:
            message = daemon_channel.receive(conn, READ_TIMEOUT_S)
        except (TimeoutError, OSError):
            message = None
        if message is None:  # a probe (is a daemon running?), or a client that went away
            conn.close()
            return
        self.served += 1
        reply = Reply(conn)
        op = message.get("op")
        if op == "ping":
            reply.send({"ok": True, **self.identity})
            return
        handler = self.handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            reply.send({"ok": False, "error": f"unknown request {op!r}"})
            return
        handler(message, reply)


def _same_user(conn: socket.socket) -> bool:
    """True if the client runs as the daemon's user (SO_PEERCRED; where it is missing, the
    socket's 0600 and the state dir's 0700 are the only guard)."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, int(peercred), 12)
    except OSError:
        return False
    uid: int = struct.unpack("3i", raw)[1]
    return uid == os.geteuid()
