"""One Kafka-protocol client connection: a sans-I/O core (``ClientConnection``)
and two thin front-ends, trio (``TrioKafkaConnection``) and blocking sockets
(``BlockingKafkaConnection``)."""

from quorum.client.blocking import BlockingKafkaConnection
from quorum.client.core import DEFAULT_CLIENT_ID, ClientConnection, Pending, Response
from quorum.client.errors import (
    ClientError,
    ConnectionClosedError,
    ProtocolError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from quorum.client.trio_connection import TrioKafkaConnection

__all__ = [
    "DEFAULT_CLIENT_ID",
    "BlockingKafkaConnection",
    "ClientConnection",
    "ClientError",
    "ConnectionClosedError",
    "Pending",
    "ProtocolError",
    "RequestTimeoutError",
    "Response",
    "TrioKafkaConnection",
    "UnsupportedVersionError",
]
