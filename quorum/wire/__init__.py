"""The Kafka wire protocol: pure bytes <-> objects, no I/O.

The modules are imported by name (``quorum.wire.messages``,
``quorum.wire.protocol``, ...); the package itself exports the names every
user of the protocol needs.
"""

from quorum.wire.api_keys import ApiKey

__all__ = ["ApiKey"]
