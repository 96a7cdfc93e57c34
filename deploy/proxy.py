"""A TCP proxy per directed link, so that tests can cut and heal links between nodes.

Why a proxy and not iptables: it needs no root, no iptables binary and no
extra loopback addresses, so partition tests run the same on a laptop and
in CI; and each direction of each link is its own proxy, so asymmetric
partitions come free. Node A reaches node B only through the proxy of link
A->B (A's ``controller.quorum.voters`` names the proxy), and a Kafka
connection carries B's responses back on the connection A opened, so
cutting A->B silences A's requests to B and their answers, while B's own
requests to A travel on B->A.

``cut(CutMode.DROP)`` behaves like a network that loses every packet:
bytes on open connections are read and thrown away, new connections are
accepted and then ignored, so the sender only learns of it by its request
timeouts. ``cut(CutMode.RESET)`` behaves like a peer that is gone: open
connections are closed and new ones are accepted and reset at once.
``heal()`` forwards again; connections that lost bytes while cut are
closed then, because a byte stream with a hole in it is no longer Kafka
framing (a real TCP connection would time out instead).

Threads, not trio: the launcher and the tests that drive it are
synchronous, and a blocked forwarder (a SIGSTOPped peer stops reading)
must stall only its own direction.
"""

from __future__ import annotations

import contextlib
import enum
import socket
import struct
import threading
from typing import Final

__all__ = ["CutMode", "LinkProxy"]

_CHUNK: Final = 64 * 1024
_CONNECT_TIMEOUT_S: Final = 2.0


class CutMode(enum.Enum):
    OPEN = "open"
    DROP = "drop"
    RESET = "reset"


def _shutdown(sock: socket.socket | None) -> None:
    # shutdown (not close) wakes a thread blocked in recv/send on this socket
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER with a zero timeout)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class _Pair:
    """One proxied connection: a forwarding thread per direction."""

    def __init__(self, client: socket.socket, upstream: socket.socket | None, *, dropping: bool,
                 name: str) -> None:
        self.client = client
        self.upstream = upstream
        # read by the forwarding threads: a bool store is atomic
        self.dropping = dropping
        self._lock = threading.Lock()
        self._running = 0
        self._name = name

    def start(self) -> None:
        directions = [(self.client, self.upstream)]
        if self.upstream is not None:
            directions.append((self.upstream, self.client))
        self._running = len(directions)
        for source, target in directions:
            threading.Thread(
                target=self._forward, args=(source, target), daemon=True, name=self._name
            ).start()

    def close(self) -> None:
        _shutdown(self.client)
        _shutdown(self.upstream)

    def _forward(self, source: socket.socket, target: socket.socket | None) -> None:
        try:
            while data := source.recv(_CHUNK):
                if target is not None and not self.dropping:
                    target.sendall(data)
        except OSError:
            pass
        finally:
            self.close()
            with self._lock:
                self._running -= 1
                last = self._running == 0
            if last:
                # only the last thread closes: no thread may touch a closed socket
                self.client.close()
                if self.upstream is not None:
                    self.upstream.close()


class LinkProxy:
    """Forwards connections made to ``port`` on ``listen_host`` to ``target``."""

    def __init__(self, target: tuple[str, int], *, listen_host: str = "127.0.0.1",
                 name: str = "link") -> None:
        self.target = target
        self.name = name
        self._server = socket.create_server((listen_host, 0))
        self.host = listen_host
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._mode = CutMode.OPEN
        self._pairs: set[_Pair] = set()
        self._closed = False
        self._thread = threading.Thread(
            target=self._accept_loop, daemon=True, name=f"proxy {name}"
        )
        self._thread.start()

    @property
    def mode(self) -> CutMode:
        return self._mode

    def cut(self, mode: CutMode = CutMode.DROP) -> None:
        assert mode is not CutMode.OPEN, "heal() opens a link"
        with self._lock:
            self._mode = mode
            pairs = list(self._pairs)
        for pair in pairs:
            if mode is CutMode.DROP:
                pair.dropping = True
            else:
                pair.close()

    def heal(self) -> None:
        with self._lock:
            self._mode = CutMode.OPEN
            broken = [p for p in self._pairs if p.dropping]
            self._pairs.difference_update(broken)
        for pair in broken:
            pair.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pairs = list(self._pairs)
            self._pairs.clear()
        _shutdown(self._server)  # wakes accept()
        self._server.close()
        for pair in pairs:
            pair.close()
        self._thread.join(timeout=5)

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        mode = self._mode
        if self._closed or mode is CutMode.RESET:
            _reset(client)
            return
        upstream = None
        if mode is CutMode.OPEN:
            try:
                upstream = socket.create_connection(self.target, timeout=_CONNECT_TIMEOUT_S)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                _reset(client)  # the target is down: refuse, as the target would
                return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, upstream, dropping=upstream is None, name=f"proxy {self.name}")
        with self._lock:
            # the link may have been cut since ``mode`` was read
            if self._mode is CutMode.DROP:
                pair.dropping = True
            if self._closed or self._mode is CutMode.RESET:
                pair.close()
            else:
                self._pairs.add(pair)
        pair.start()
        self._forget_finished()

    def _forget_finished(self) -> None:
        with self._lock:
            self._pairs = {p for p in self._pairs if p.client.fileno() != -1}
