"""The controller listener tells the driver when a broker's last heartbeat connection
closes (a killed broker's kernel closes its sockets), and only then."""

from __future__ import annotations

from pathlib import Path

from quorum.node.connection import ServerConnection
from quorum.node.inputs import BrokerConnectionLost, ControllerCall, Input
from quorum.node.router import RequestRouter
from quorum.wire.messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from quorum.wire.protocol import encode_request

from .test_pieces import header, settings

HEARTBEAT_KEY = 63


class _Listener:
    def __init__(self, tmp_path: Path, *, notify: bool = True) -> None:
        self.submitted: list[Input] = []
        self.notified: list[Input] = []
        self.router = RequestRouter(
            settings=settings(tmp_path), leader_id=lambda: 1, submit=self._submit,
            notify=self.notified.append if notify else None,
        )

    async def _submit(self, item: Input) -> None:
        self.submitted.append(item)

    async def heartbeat(self, conn: ServerConnection, broker_id: int, *,
                        answered: bool = True) -> None:
        """A heartbeat on ``conn``, answered by the controller unless ``answered`` is off."""
        frame = encode_request(header(1, HEARTBEAT_KEY, 1),
                               BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=5))
        await self.router.dispatch(conn, frame[4:])
        call = self.submitted[-1]
        assert isinstance(call, ControllerCall)
        if answered:
            call.reply(BrokerHeartbeatResponse())


async def test_the_last_heartbeat_connection_closing_is_told_once(tmp_path: Path) -> None:
    listener = _Listener(tmp_path)
    first, second = ServerConnection("a"), ServerConnection("b")
    await listener.heartbeat(first, 4)
    await listener.heartbeat(first, 4)  # the same connection counts once
    # the broker reconnected and heartbeat on a new connection before the old one closed
    await listener.heartbeat(second, 4)
    assert all(isinstance(i, ControllerCall) for i in listener.submitted)
    first.close()
    assert listener.notified == [], "another connection of the broker is still open"
    second.close()
    assert listener.notified == [BrokerConnectionLost(4)]
    second.close()
    assert listener.notified == [BrokerConnectionLost(4)], "a connection closes once"


async def test_each_broker_is_counted_apart(tmp_path: Path) -> None:
    listener = _Listener(tmp_path)
    four, five = ServerConnection("a"), ServerConnection("b")
    await listener.heartbeat(four, 4)
    await listener.heartbeat(five, 5)
    five.close()
    assert listener.notified == [BrokerConnectionLost(5)]
    # broker 5 back on a new connection, then gone again
    again = ServerConnection("c")
    await listener.heartbeat(again, 5)
    again.close()
    assert listener.notified == [BrokerConnectionLost(5), BrokerConnectionLost(5)]
    four.close()
    assert listener.notified[-1] == BrokerConnectionLost(4)


async def test_a_connection_that_carried_no_heartbeat_tells_nothing(tmp_path: Path) -> None:
    listener = _Listener(tmp_path)
    ServerConnection("admin").close()
    silent = _Listener(tmp_path, notify=False)
    conn = ServerConnection("a")
    await silent.heartbeat(conn, 4)
    conn.close()
    assert listener.notified == [] and silent.notified == []


async def test_a_connection_closed_with_a_request_unanswered_tells_nothing(
    tmp_path: Path,
) -> None:
    # the broker gave up on a slow heartbeat answer and closed its connection itself: it
    # reconnects and asks again, so this is no sign that it is gone
    listener = _Listener(tmp_path)
    conn = ServerConnection("a")
    await listener.heartbeat(conn, 4, answered=False)
    assert conn.unanswered == 1
    conn.close()
    assert listener.notified == []
