"""indexer/daemon/protocol.py: the daemon's socket, reached through the state dir's fd."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from indexer.daemon import protocol as daemon_channel
from indexer.daemon.protocol import SOCKET_NAME


def _state(parent: Path, name: str = "state") -> Path:
    root = parent / name
    root.mkdir(mode=0o700, parents=True)
    return root


def _echo_once(listener: daemon_channel.Listener) -> threading.Thread:
    """Answer one request with its own op, as the daemon's request thread would."""

    def serve() -> None:
        conn, _ = listener.sock.accept()
        with conn:
            message = daemon_channel.receive(conn, 10)
            if message is not None:
                daemon_channel.send(conn, {"ok": True, "echo": message.get("op")})

    thread = threading.Thread(target=serve)
    thread.start()
    return thread


def test_a_state_dir_longer_than_a_socket_address_works(tmp_path: Path) -> None:
    root = _state(tmp_path / ("deep-" * 30))
    assert len(os.fsencode(root / SOCKET_NAME)) > 108  # sun_path could not hold it
    listener = daemon_channel.listen(root)
    try:
        served = _echo_once(listener)
        sock = daemon_channel.connect(root, 5)
        assert sock is not None
        daemon_channel.send(sock, {"op": "ping"})
        assert daemon_channel.receive(sock, 10) == {"ok": True, "echo": "ping"}
        sock.close()
        served.join(10)
        mode = os.stat(root / SOCKET_NAME, follow_symlinks=False).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    finally:
        daemon_channel.close_listener(root, listener)
    assert not (root / SOCKET_NAME).exists()


def test_no_socket_or_no_listener_means_no_daemon(tmp_path: Path) -> None:
    root = _state(tmp_path)
    assert daemon_channel.connect(root, 1) is None  # no socket file
    assert daemon_channel.connect(tmp_path / "missing", 1) is None  # no state dir
    listener = daemon_channel.listen(root)
    listener.sock.close()  # a daemon killed with -9 leaves its socket file behind
    assert (root / SOCKET_NAME).exists()
    assert daemon_channel.connect(root, 1) is None
    assert not daemon_channel.is_listening(root)
    again = daemon_channel.listen(root)  # the next daemon replaces it
    try:
        assert daemon_channel.is_listening(root) and daemon_channel.is_bound(root, again)
        (root / SOCKET_NAME).unlink()  # removed by someone: the daemon sees it is unreachable
        assert not daemon_channel.is_bound(root, again)
    finally:
        daemon_channel.close_listener(root, again)


def test_a_symlink_in_place_of_the_socket_is_never_followed(tmp_path: Path) -> None:
    # A live socket elsewhere, linked from the state dir: a client must not reach it.
    elsewhere = tmp_path / "elsewhere.sock"
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(elsewhere))
    other.listen(4)
    root = _state(tmp_path)
    (root / SOCKET_NAME).symlink_to(elsewhere)
    try:
        assert daemon_channel.connect(root, 1) is None
        listener = daemon_channel.listen(root)  # the link itself is replaced, not its target
        try:
            assert not (root / SOCKET_NAME).is_symlink()
            assert stat.S_ISSOCK(os.stat(elsewhere).st_mode)
        finally:
            daemon_channel.close_listener(root, listener)
    finally:
        other.close()


def test_a_regular_file_in_place_of_the_socket_is_no_daemon(tmp_path: Path) -> None:
    root = _state(tmp_path)
    (root / SOCKET_NAME).write_text("not a socket")
    assert daemon_channel.connect(root, 1) is None


def test_closing_leaves_a_socket_that_is_not_its_own(tmp_path: Path) -> None:
    root = _state(tmp_path)
    first = daemon_channel.listen(root)
    second = daemon_channel.listen(root)  # replaced first's file
    daemon_channel.close_listener(root, first)
    assert daemon_channel.is_listening(root)  # second's socket stays
    daemon_channel.close_listener(root, second)
    assert not (root / SOCKET_NAME).exists()


def test_receive_gives_none_for_a_peer_that_closes_or_sends_no_object(tmp_path: Path) -> None:
    for sent in (b"", b"[1, 2]\n", b"{not json\n", b"x" * (daemon_channel.MAX_LINE_BYTES + 10)):
        left, right = socket.socketpair()
        with left, right:
            right.sendall(sent)
            right.shutdown(socket.SHUT_WR)
            assert daemon_channel.receive(left, 5) is None, sent[:20]


def test_receive_times_out_without_a_whole_line(tmp_path: Path) -> None:
    left, right = socket.socketpair()
    with left, right:
        right.sendall(b'{"ok": tr')
        with pytest.raises(TimeoutError):
            daemon_channel.receive(left, 0.05)


def test_an_unsafe_state_dir_is_refused_by_connect_and_is_no_daemon_to_a_probe(
    tmp_path: Path,
) -> None:
    from indexer.errors import StateDirError

    root = _state(tmp_path)
    listener = daemon_channel.listen(root)
    try:
        root.chmod(0o777)  # writable by others: ctxd uses nothing in it
        with pytest.raises(StateDirError):
            daemon_channel.connect(root, 1)
        assert not daemon_channel.is_listening(root)  # status and doctor report it instead
    finally:
        root.chmod(0o700)
        daemon_channel.close_listener(root, listener)
