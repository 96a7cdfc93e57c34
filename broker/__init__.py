"""The broker process: metadata observer and image, registration and heartbeats with
the active controller, the replica manager interface, and the broker listener."""

from broker.errors import BrokerStartupError
from broker.lifecycle import BrokerLifecycle, BrokerState, LifecycleConfig
from broker.metadata_machine import BrokerMetadataMachine
from broker.node import BrokerNode
from broker.replica.manager import (
    AssignmentChanges,
    PartitionAssignment,
    PartitionKey,
    PartitionRole,
    RecordingReplicaManager,
    ReplicaManager,
    assignment_changes,
    assignments_of,
)
from broker.settings import BrokerListener, BrokerSettings, broker_settings

__all__ = [
    "AssignmentChanges",
    "BrokerLifecycle",
    "BrokerListener",
    "BrokerMetadataMachine",
    "BrokerNode",
    "BrokerSettings",
    "BrokerStartupError",
    "BrokerState",
    "LifecycleConfig",
    "PartitionAssignment",
    "PartitionKey",
    "PartitionRole",
    "RecordingReplicaManager",
    "ReplicaManager",
    "assignment_changes",
    "assignments_of",
    "broker_settings",
]
