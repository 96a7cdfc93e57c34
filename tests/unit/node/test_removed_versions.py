"""The versions Kafka 4.0 removed (KIP-896) close the connection on both listeners.

Found by the differential tests (tests/kafka/differential): Kafka 4.4 neither advertises nor
serves CreateTopics v0-1, DescribeConfigs v0 and DescribeLogDirs v0 on its broker listener,
nor DeleteTopics v0 and AlterPartition v0-1 on its controller listener, and closes the
connection on them; pykraft advertised and served them. The codec still reads and writes
them (its golden vectors stay); only the listeners refuse them.
"""

from __future__ import annotations

import pytest

from broker.router import BrokerRequestRejected, broker_listener_table
from quorum.node.connection import ServerConnection
from quorum.node.local_answers import ListenerApis
from quorum.node.router import RequestRejected, controller_listener_table
from quorum.wire import ApiKey
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    AlterPartitionRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
)
from quorum.wire.protocol import RequestHeader, encode_request

BROKER = ListenerApis(
    broker_listener_table(data_plane=True), where="the broker listener",
    rejected=BrokerRequestRejected,
)
CONTROLLER = ListenerApis(
    controller_listener_table(), where="the controller listener", rejected=RequestRejected
)

# Kafka 4.4.0's lowest versions (its ApiVersions tables: tests/kafka/differential/kafka_tables)
BROKER_LOWEST = {
    ApiKey.CREATE_TOPICS: (2, CreateTopicsRequest()),
    ApiKey.DELETE_TOPICS: (1, DeleteTopicsRequest()),
    ApiKey.DESCRIBE_CONFIGS: (1, DescribeConfigsRequest()),
    ApiKey.DESCRIBE_LOG_DIRS: (1, DescribeLogDirsRequest()),
}
CONTROLLER_LOWEST = {
    ApiKey.CREATE_TOPICS: (2, CreateTopicsRequest()),
    ApiKey.DELETE_TOPICS: (1, DeleteTopicsRequest()),
    ApiKey.DESCRIBE_CONFIGS: (1, DescribeConfigsRequest()),
    ApiKey.ALTER_PARTITION: (2, AlterPartitionRequest()),
}


def _frame(api_key: ApiKey, version: int, message: object) -> bytes:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=1, client_id="x")
    return encode_request(header, message)[4:]


@pytest.mark.parametrize(
    ("apis", "lowest"), [(BROKER, BROKER_LOWEST), (CONTROLLER, CONTROLLER_LOWEST)],
    ids=["broker", "controller"],
)
def test_the_removed_versions_are_not_advertised_and_close_the_connection(
    apis: ListenerApis, lowest: dict[ApiKey, tuple[int, object]]
) -> None:
    for api_key, (first, message) in lowest.items():
        assert apis.table[api_key][0] == first, api_key
        for version in range(first):
            with pytest.raises(WireDecodeError, match="is not served"):
                apis.decode(ServerConnection("old client"), _frame(api_key, version, message))
        assert apis.decode(ServerConnection("client"), _frame(api_key, first, message))
