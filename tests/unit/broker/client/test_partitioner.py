"""Kafka's default partitioner: murmur2 as Kafka's own test vectors and kafka-python have it."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from broker.client.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive


def test_murmur2_matches_kafkas_test_vectors() -> None:
    # UtilsTest.testMurmur2 in Apache Kafka
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    assert {key: murmur2(key) for key in cases} == cases


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(key: bytes) -> None:
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)


@given(st.binary(max_size=32), st.integers(1, 1000))
def test_a_key_goes_where_kafkas_client_puts_it(key: bytes, partitions: int) -> None:
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    assert partition_for_key(key, partitions) == expected
    assert to_positive(-1) == 0x7FFFFFFF


def test_keyless_records_stick_to_one_partition_until_its_batch_is_sent() -> None:
    partitioner = StickyPartitioner(random.Random(3))
    first = partitioner.partition("t", [0, 1, 2], 3)
    assert all(partitioner.partition("t", [0, 1, 2], 3) == first for _ in range(10))
    partitioner.batch_sent("t", first, [0, 1, 2], 3)
    second = partitioner.partition("t", [0, 1, 2], 3)
    assert second != first
    # only partitions with a leader are picked; with none, any partition
    partitioner.batch_sent("t", second, [2], 3)
    assert partitioner.partition("t", [2], 3) == 2
    assert partitioner.partition("other", [], 2) in (0, 1)
