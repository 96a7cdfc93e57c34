"""Records of a v2 batch decoded into columns: parallel lists, no object per record.

``decode_columns(data, count)`` reads the record section of one batch (after
decompression) into five lists: offset deltas, timestamp deltas, keys,
values and headers. It is the consumer's only record decoder: the
per-record path zips the columns into ``ConsumerRecord``s, the batch path
hands the columns over as they are (the bench and the Spark reader read
millions of records and want neither a ``Record`` nor a ``ConsumerRecord``
per record). The layout is ``quorum.wire.records``' (see its docstring);
the loop inlines the one- and two-byte varint cases as its decoder does.
"""

from __future__ import annotations

import attrs

from broker.client.types import HeaderPairs
from quorum.wire.errors import CorruptRecordError
from quorum.wire.records import read_header_pairs, read_varint

__all__ = ["RecordColumns", "decode_columns"]

_NO_HEADERS: HeaderPairs = ()


@attrs.frozen
class RecordColumns:
    """The records of one batch, one list per field (deltas from the batch header)."""

    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[HeaderPairs]

    def __len__(self) -> int:
        return len(self.values)

    def sliced(self, start: int) -> RecordColumns:
        """The records from index ``start`` on."""
        if start <= 0:
            return self
        return RecordColumns(
            self.offset_deltas[start:], self.timestamp_deltas[start:], self.keys[start:],
            self.values[start:], self.headers[start:],
        )


def decode_columns(data: bytes, count: int) -> RecordColumns:
    """Decode exactly ``count`` records filling ``data``; raises CorruptRecordError."""
    offsets: list[int] = []
    stamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[HeaderPairs] = []
    size = len(data)
    pos = 0
    try:
        for _ in range(count):
            byte = data[pos]
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                zigzag = (byte & 0x7F) | data[pos + 1] << 7
                length, pos = (zigzag >> 1) ^ -(zigzag & 1), pos + 2
            else:
                length, pos = read_varint(data, pos, 5)
            end = pos + length
            if length < 6 or end > size:
                raise CorruptRecordError(f"record length {length} is impossible")
            byte = data[pos + 1]  # + 1: attributes, unused
            if byte < 0x80:
                stamps.append((byte >> 1) ^ -(byte & 1))
                pos += 2
            else:
                delta, pos = read_varint(data, pos + 1, 10)
                stamps.append(delta)
            byte = data[pos]
            if byte < 0x80:
                offsets.append((byte >> 1) ^ -(byte & 1))
                pos += 1
            else:
                delta, pos = read_varint(data, pos, 5)
                offsets.append(delta)
            byte = data[pos]
            if byte < 0x80:
                n, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            else:
                n, pos = read_varint(data, pos, 5)
            if n < 0:
                keys.append(None)
            elif pos + n <= end:
                keys.append(data[pos : pos + n])
                pos += n
            else:
                raise CorruptRecordError(f"key of {n} bytes at byte {pos} overruns its record")
            byte = data[pos]
            if byte < 0x80:
                n, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                zigzag = (byte & 0x7F) | data[pos + 1] << 7
                n, pos = (zigzag >> 1) ^ -(zigzag & 1), pos + 2
            else:
                n, pos = read_varint(data, pos, 5)
            if n < 0:
                values.append(None)
            elif pos + n <= end:
                values.append(data[pos : pos + n])
                pos += n
            else:
                raise CorruptRecordError(f"value of {n} bytes at byte {pos} overruns its record")
            if data[pos] == 0:  # no headers: the common case
                headers.append(_NO_HEADERS)
                pos += 1
            else:
                pairs, pos = read_header_pairs(data, pos, end)
                headers.append(pairs)
            if pos != end:
                raise CorruptRecordError(
                    f"its fields end at byte {pos} but its length says byte {end}"
                )
    except IndexError as exc:
        raise CorruptRecordError(
            f"record {len(values)} of {count} at byte {pos} runs past the end of the records"
        ) from exc
    if pos != size:
        raise CorruptRecordError(f"{size - pos} bytes follow the {count} declared records")
    return RecordColumns(offsets, stamps, keys, values, headers)
