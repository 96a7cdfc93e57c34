"""Kafka's group -> __consumer_offsets partition map, against values Java computed.

The expected hashes and partitions were printed by jshell (OpenJDK) with
``s.hashCode()`` and Kafka's ``Utils.abs(s.hashCode()) % n``
(``n == Integer.MIN_VALUE ? 0 : Math.abs(n)``); they are literals here,
not computed by the code under test.
"""

from __future__ import annotations

import pytest

from broker.group import java_string_hash, offsets_partition_for

# (text, String.hashCode(), Utils.abs(hash) % 50)
JAVA_VALUES = [
    ("", 0, 0),
    ("hello", 99162322, 22),
    ("Hello World", -862545276, 26),
    ("my-group", -1906497762, 12),
    ("console-consumer-12345", 158455506, 6),
    ("polygenelubricants", -2147483648, 0),
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
    ("gruppe-\u00e9\u00e8", -595626255, 5),
    ("\U0001f600", 1772899, 49),
]


@pytest.mark.parametrize(("text", "java_hash", "partition"), JAVA_VALUES)
def test_the_hash_and_partition_are_what_java_computes(
    text: str, java_hash: int, partition: int
) -> None:
    assert java_string_hash(text) == java_hash
    assert offsets_partition_for(text, 50) == partition


def test_integer_min_value_maps_to_partition_zero_as_kafka_utils_abs_does() -> None:
    # Math.abs(Integer.MIN_VALUE) is negative; masking would give 0 too, but
    # any other negative hash separates the two readings (see "Hello World")
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert offsets_partition_for("polygenelubricants", 7) == 0


def test_a_negative_hash_uses_its_absolute_value_not_a_mask() -> None:
    h = java_string_hash("Hello World")
    assert h < 0
    assert offsets_partition_for("Hello World", 50) == (-h) % 50 != (h & 0x7FFFFFFF) % 50


def test_a_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        offsets_partition_for("g", 0)
