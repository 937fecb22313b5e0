"""``poolboy dev``'s port check on real loopback sockets: a listener takes a port, a just-closed one does not."""

from __future__ import annotations

import socket

import pytest

import procutil
from stack.ports import LOOPBACK, PortRequest, PortTaken, check, free, is_free


def test_a_listening_port_is_taken_and_named_in_one_line() -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not is_free(port)
        with pytest.raises(PortTaken, match=rf"^port {port} \(Flower\) is already in use on 127.0.0.1; choose"):
            check([PortRequest(port, "Flower", "--flower-port")])


def test_a_port_whose_server_just_stopped_is_free() -> None:
    """The server side closes first, so its port keeps TIME_WAIT connections for a minute: restarting `poolboy dev`
    at once must still find it free, as Flower and the metrics servers (SO_REUSEADDR) will bind it."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # active close on the server's port: TIME_WAIT there
        client.recv(1)
        client.close()
    assert is_free(port)


def test_free_ports_are_distinct_listenable_and_never_ones_outgoing_connections_get() -> None:
    """A component is told its port before it binds it: a port from the kernel's ephemeral range could meanwhile be
    the local end of any outgoing connection (a watcher died with "Address already in use" that way)."""
    low, high = procutil._ephemeral_range()
    given = [free(LOOPBACK) for _ in range(40)]
    assert len(set(given)) == len(given)
    assert not [port for port in given if low <= port <= high]
    for port in given[:5]:
        with socket.socket() as listener:
            listener.bind((LOOPBACK, port))
            listener.listen()
            assert not is_free(port)


def test_a_listened_port_is_not_given_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a range of ten ports where nine have listeners, the tenth is the one given out."""
    base = min(procutil.free_port(), procutil.LISTEN_RANGE[1] - 10)
    monkeypatch.setattr(procutil, "LISTEN_RANGE", (base, base + 9))
    monkeypatch.setattr(procutil, "_given", set())
    listeners = []
    try:
        for port in range(base, base + 9):
            listener = socket.socket()
            listeners.append(listener)
            listener.bind((LOOPBACK, port))
            listener.listen()
        if not is_free(base + 9):
            pytest.skip(f"port {base + 9} is in use by another program")
        assert procutil.free_port() == base + 9
    finally:
        for sock in listeners:
            sock.close()
