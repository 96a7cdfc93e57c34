"""The client library's exceptions: one family, named as Kafka names them.

Every failure a producer, consumer or admin call reports is a ``KafkaError``.
When the server answered with an error code, ``error`` is that code
(``Errors.NOT_LEADER_OR_FOLLOWER``) and the text is the server's message
when it sent one; failures found on the client side (a timeout, a closed
client, a record that can never fit a request) carry the name of Kafka's
exception for the same case (``TimeoutException``) and, where one fits,
the error code Kafka maps it to. Bad settings are ``quorum.config``'s
``ConfigError``, raised when the client is built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from quorum.wire.error_codes import Errors

__all__ = [
    "ClientClosedError",
    "CommitFailedError",
    "KafkaError",
    "KafkaTimeoutError",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "error_from_code",
]


class KafkaError(Exception):
    """An operation failed; ``name`` is Kafka's name for the failure."""

    # Kafka's exception name for failures that have no error code
    kafka_name: ClassVar[str | None] = None

    def __init__(self, error: Errors | None, message: str | None = None) -> None:
        self.error = error
        self.detail = message
        # the server's own text, when the answer carried one (``detail`` may add context)
        self.server_message: str | None = None
        text = message or (error.name.lower().replace("_", " ") if error is not None else "")
        super().__init__(f"{self.name}: {text}" if text else self.name)

    @property
    def name(self) -> str:
        if self.kafka_name is not None:
            return self.kafka_name
        return self.error.name if self.error is not None else type(self).__name__

    @property
    def retriable(self) -> bool:
        """Whether the same call may succeed later without any change by the caller."""
        return self.error is not None and self.error.retriable


class KafkaTimeoutError(KafkaError):
    """Kafka's TimeoutException: the time allowed ran out before an answer."""

    kafka_name = "TimeoutException"

    def __init__(self, message: str) -> None:
        super().__init__(Errors.REQUEST_TIMED_OUT, message)


class ClientClosedError(KafkaError):
    """The client was closed; Kafka raises IllegalStateException here."""

    kafka_name = "IllegalStateException"

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


class CommitFailedError(KafkaError):
    """A commit the group refused because this member is no longer in its generation.

    Kafka's CommitFailedException: the group rebalanced (the member took too
    long between polls, or was fenced) and gave its partitions to others.
    """

    kafka_name = "CommitFailedException"

    def __init__(self, error: Errors, detail: str = "") -> None:
        super().__init__(
            error,
            "Commit cannot be completed since the group has already rebalanced and assigned "
            "the partitions to another member. This means that the time between subsequent "
            "calls to poll() was longer than the configured max.poll.interval.ms, which "
            "typically implies that the poll loop is spending too much time message "
            f"processing.{' ' + detail if detail else ''}",
        )


class OffsetOutOfRangeError(KafkaError):
    """A position fell outside the log and ``auto.offset.reset`` is ``none``."""

    def __init__(self, positions: dict[tuple[str, int], int]) -> None:
        self.positions = dict(positions)
        where = ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(positions.items()))
        super().__init__(
            Errors.OFFSET_OUT_OF_RANGE,
            f"Fetch position out of range, no configured reset policy: {where}",
        )


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and ``auto.offset.reset`` is ``none``."""

    kafka_name = "NoOffsetForPartitionException"

    def __init__(self, partitions: Iterable[tuple[str, int]]) -> None:
        self.partitions = tuple(sorted(partitions))
        where = ", ".join(f"{t}-{p}" for t, p in self.partitions)
        super().__init__(None, f"Undefined offset with no reset policy for partitions: {where}")


class LogTruncationError(KafkaError):
    """The log diverged below a position (KIP-320) and ``auto.offset.reset`` is ``none``.

    ``divergent_offsets`` maps each partition to the first offset known to
    diverge (None when the leader knows no end offset for the epoch).
    """

    kafka_name = "LogTruncationException"

    def __init__(self, divergent_offsets: dict[tuple[str, int], int | None]) -> None:
        self.divergent_offsets = dict(divergent_offsets)
        where = ", ".join(
            f"{t}-{p} at {'an unknown offset' if o is None else o}"
            for (t, p), o in sorted(divergent_offsets.items(), key=lambda item: item[0])
        )
        super().__init__(None, f"Truncation detected: {where}")


def error_from_code(code: int, message: str | None = None, *, context: str = "") -> KafkaError:
    """The exception for a response's error code, with the server's message if any."""
    error = Errors.from_code(code)
    text = message or error.name.lower().replace("_", " ")
    exc = KafkaError(error, f"{context}: {text}" if context else text)
    exc.server_message = message
    return exc
