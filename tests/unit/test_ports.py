"""``poolboy dev``'s port check on real loopback sockets: a listener takes a port, a just-closed one does not."""

from __future__ import annotations

import socket

import pytest

from stack.ports import PortRequest, PortTaken, check, is_free


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
