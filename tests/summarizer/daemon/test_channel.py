"""summarizer/daemon/channel.py: the daemon's request thread answers its own user only."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from indexer.daemon import protocol as daemon_channel
from summarizer.daemon.channel import Reply, RequestServer

_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"op":"ping"}\\n')
    print(repr(s.recv(4096)))
except (BrokenPipeError, ConnectionResetError):  # closed, unread: no answer either
    print(repr(b""))
"""


def _server(root: Path) -> tuple[daemon_channel.Listener, RequestServer]:
    listener = daemon_channel.listen(root)
    calls: list[dict[str, Any]] = []

    def echo(message: dict[str, Any], reply: Reply) -> None:
        calls.append(message)
        reply.send({"ok": True, "echo": message.get("n")})

    server = RequestServer(listener, {"echo": echo}, {"pid": 4242})
    server.start()
    return listener, server


def test_ping_and_a_handler_are_answered_and_an_unknown_op_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    listener, server = _server(root)
    try:
        for message, expected in (
            ({"op": "ping"}, {"ok": True, "pid": 4242}),
            ({"op": "echo", "n": 7}, {"ok": True, "echo": 7}),
            ({"op": "nope"}, {"ok": False, "error": "unknown request 'nope'"}),
        ):
            sock = daemon_channel.connect(root, 5)
            assert sock is not None
            daemon_channel.send(sock, message)
            assert daemon_channel.receive(sock, 10) == expected
            sock.close()
        assert daemon_channel.is_listening(root)  # a probe: connect, close, nothing asked
    finally:
        server.stop()
        daemon_channel.close_listener(root, listener)
    assert server.served == 3


# The client runs as nobody: an interpreter outside root's home (the test's may be in one).
_SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
@pytest.mark.skipif(_SYSTEM_PYTHON is None, reason="no system python3 for the other user")
def test_a_client_of_another_user_gets_no_answer(tmp_path: Path) -> None:
    # Only root could reach the socket through the 0700 state dir; here the socket is in an
    # open folder, so that the check of the client's user is what stops it.
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    listener, server = _server(root)
    # Beside the test's tmp_path (pytest's folders are 0700), on the same file system.
    open_dir = Path(tempfile.mkdtemp(dir=tmp_path.parents[2]))
    open_dir.chmod(0o755)
    exposed = open_dir / "daemon.sock"
    os.link(root / daemon_channel.SOCKET_NAME, exposed)
    exposed.chmod(0o666)
    try:
        done = subprocess.run(
            [str(_SYSTEM_PYTHON), "-I", "-c", _CLIENT, str(exposed)],
            user=65534,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        server.stop()
        daemon_channel.close_listener(root, listener)
        shutil.rmtree(open_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "b''"  # closed without an answer
    assert server.served == 0
