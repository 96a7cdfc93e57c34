"""The topics in a consumer's subscription (ConsumerProtocolSubscription).

The coordinator does not run assignors, but it needs a consumer group's
subscribed topics for one answer Kafka gives: OffsetDelete refuses a topic
the group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).  The subscription
starts with an int16 version, then the topic names: an int32-counted array
of int16-length strings.  Kafka reads every version as v0, the prefix all
versions share; so does this.  Anything unreadable is unknown (None), as in
Kafka's ``computeSubscribedTopics``.
"""

from __future__ import annotations

import struct

from quorum.wire.errors import WireDecodeError
from quorum.wire.primitives import read_array_length, read_string

__all__ = ["subscribed_topics"]

def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    if len(metadata) < 2:
        return None
    (version,) = struct.unpack_from(">h", metadata, 0)
    if version < 0:
        return None
    try:
        count, pos = read_array_length(metadata, 2)
        topics = set()
        for _ in range(max(count, 0)):
            topic, pos = read_string(metadata, pos)
            topics.add(topic)
    except (WireDecodeError, struct.error, IndexError, ValueError):
        return None
    return frozenset(topics)
