"""The client connection's exceptions: one small hierarchy a caller can act on."""

from __future__ import annotations

__all__ = [
    "ClientError",
    "ConnectionClosedError",
    "ProtocolError",
    "RequestTimeoutError",
    "UnsupportedVersionError",
]


class ClientError(Exception):
    """Base class of every error of a Kafka client connection."""


class ConnectionClosedError(ClientError):
    """The connection is closed or broken; open a new one to retry."""


class RequestTimeoutError(ClientError):
    """No response within the request's timeout; the connection stays usable."""


class UnsupportedVersionError(ClientError):
    """The server does not serve the API, or no version both sides speak."""


class ProtocolError(ClientError):
    """The server sent bytes that break the protocol; the connection is unusable."""
