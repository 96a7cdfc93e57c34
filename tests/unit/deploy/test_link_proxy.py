"""``LinkProxy``: forwards, drops while cut, resets while cut hard, and heals."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from deploy.proxy import CutMode, LinkProxy

TIMEOUT = 5.0


class EchoServer:
    """Echoes every byte back; counts the connections it accepted."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = self.server.getsockname()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(4096):
                    conn.sendall(data)
            except OSError:
                pass

    def close(self) -> None:
        if self.server.fileno() != -1:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes accept()
            self.server.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[LinkProxy]:
    link = LinkProxy(echo.address, name="test")
    yield link
    link.close()


def connect(link: LinkProxy) -> socket.socket:
    sock = socket.create_connection((link.host, link.port), timeout=TIMEOUT)
    sock.settimeout(TIMEOUT)
    return sock


def roundtrip(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    received = b""
    while len(received) < len(data):
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received


def try_exchange(link: LinkProxy) -> bytes:
    # the reset may reach the client while it connects, sends or reads
    with connect(link) as sock:
        sock.sendall(b"anyone?")
        return sock.recv(4096)


def test_an_open_link_forwards_both_ways(proxy: LinkProxy) -> None:
    with connect(proxy) as sock:
        assert roundtrip(sock, b"hello") == b"hello"


def test_a_dropped_link_swallows_bytes_and_heal_closes_the_damaged_connection(
    proxy: LinkProxy,
) -> None:
    with connect(proxy) as sock:
        assert roundtrip(sock, b"before") == b"before"
        proxy.cut(CutMode.DROP)
        sock.sendall(b"lost")
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
        sock.settimeout(TIMEOUT)
        proxy.heal()
        assert sock.recv(4096) == b""  # closed: the stream has a hole in it
    with connect(proxy) as fresh:
        assert roundtrip(fresh, b"after") == b"after"


def test_new_connections_to_a_dropped_link_are_accepted_but_never_reach_the_target(
    proxy: LinkProxy, echo: EchoServer
) -> None:
    proxy.cut(CutMode.DROP)
    with connect(proxy) as sock:
        sock.sendall(b"into the void")
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
    assert echo.accepted == 0


def test_a_reset_link_closes_open_connections_and_refuses_new_ones(proxy: LinkProxy) -> None:
    with connect(proxy) as sock:
        assert roundtrip(sock, b"x") == b"x"
        proxy.cut(CutMode.RESET)
        assert sock.recv(4096) == b""
    with pytest.raises(ConnectionResetError):
        try_exchange(proxy)


def test_a_link_to_a_target_that_is_down_resets_the_connection(echo: EchoServer) -> None:
    echo.close()
    link = LinkProxy(echo.address, name="down")
    try:
        with pytest.raises(ConnectionResetError):
            try_exchange(link)
    finally:
        link.close()
