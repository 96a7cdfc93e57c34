"""The broker's exceptions: why a broker process refuses to start or gives up."""

from __future__ import annotations

from quorum.node import NodeStartupError

__all__ = ["BrokerStartupError"]


class BrokerStartupError(NodeStartupError):
    """The broker cannot start (its config, or no registration with the controllers).

    A ``NodeStartupError``, so whatever runs a node reports both the same way.
    """
