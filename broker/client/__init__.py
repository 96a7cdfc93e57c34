"""The pykraft client library: what a program needs to produce, consume and administer.

Its cores are sans-I/O (partitioning, batching, fetch positions), driven by a
trio front-end and a blocking one over the shared client connection
(``quorum.client``), as the CLI, the benches, the tests and the Spark
pipeline use it.
"""

from broker.client.partitioner import (
    StickyPartitioner,
    murmur2,
    partition_for_key,
    to_positive,
)

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key", "to_positive"]
