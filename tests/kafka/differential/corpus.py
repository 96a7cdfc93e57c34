"""The corpus's machinery: a ``Session`` per cluster and ``Case``s run against both.

A case is a short request sequence written once and run against each cluster's session,
at every version the pykraft listener advertises for its api key unless it names its
versions; what it returns (one outcome or several) is normalised with each cluster's
facts and compared (``compare.differences``). A session knows its cluster's nodes and
asks the cluster itself (Metadata, FindCoordinator, DescribeQuorum) where a request must
go, so the same case finds the leader, a follower or the coordinator on either side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeVar

import attrs

from deploy.layout import LaunchError
from deploy.waiting import wait_until
from quorum.wire.api_keys import ApiKey
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    FindCoordinatorRequest,
    MetadataRequest,
    MetadataRequestTopic,
)
from quorum.wire.schema import message_info

from ..normalise_fields import Cluster, normalise
from .compare import Difference, differences
from .wire import Answered, NodeLink, Outcome, request_frame

__all__ = ["Case", "CaseError", "Result", "Session", "compare_case", "run_case"]

Listener = Literal["broker", "controller"]
_WAIT_S: Final = 30.0


class CaseError(AssertionError):
    """A case could not run as written (a setup step failed): not a difference."""


T = TypeVar("T")


def until(condition: Callable[[], T | None], what: str, timeout: float = _WAIT_S) -> T:
    """``deploy.waiting.wait_until``, failing with CaseError (a setup step, not a
    difference) when ``condition`` is not met within ``timeout``."""
    try:
        return wait_until(condition, what, timeout)
    except LaunchError as exc:
        raise CaseError(str(exc)) from None


class Session:
    """One cluster: a connection per node, and where requests must go."""

    def __init__(self, name: str, brokers: dict[int, tuple[str, int]],
                 controllers: dict[int, tuple[str, int]], cluster_id: str) -> None:
        self.name = name
        self.brokers = brokers
        self.controllers = controllers
        self.cluster_id = cluster_id
        self.cluster = Cluster(frozenset(brokers), frozenset(controllers))
        self._links: dict[tuple[Listener, int], NodeLink] = {}
        self._placements: dict[str, dict[int, tuple[int, tuple[int, ...]]]] = {}

    # -- sending ------------------------------------------------------------------------

    def link(self, node: int, listener: Listener = "broker") -> NodeLink:
        key = (listener, node)
        if key not in self._links:
            table = self.brokers if listener == "broker" else self.controllers
            self._links[key] = NodeLink(table[node])
        return self._links[key]

    def send(self, node: int, msg: Any, version: int, *, listener: Listener = "broker",
             trailing: bytes = b"", wait: float | None = None) -> Outcome:
        key = message_info(type(msg)).api_key
        assert key is not None
        link = self.link(node, listener)
        data = request_frame(msg, key, version, link.next_correlation_id(), trailing=trailing)
        return link.exchange(data, key, version, wait=wait)

    def send_raw(self, node: int, build: Callable[[int], bytes], api_key: int, version: int,
                 *, listener: Listener = "broker", wait: float | None = None) -> Outcome:
        """``build(correlation_id)`` is the whole frame (or several)."""
        link = self.link(node, listener)
        return link.exchange(build(link.next_correlation_id()), api_key, version, wait=wait)

    def answer(self, node: int, msg: Any, version: int, *, listener: Listener = "broker") -> Any:
        """The decoded answer of a setup step (anything else fails the case)."""
        outcome = self.send(node, msg, version, listener=listener)
        if not isinstance(outcome, Answered):
            raise CaseError(f"{self.name}: {type(msg).__name__} got {outcome}")
        return outcome.message

    def close(self) -> None:
        for link in self._links.values():
            link.close()

    # -- where -----------------------------------------------------------------------------

    @property
    def any_broker(self) -> int:
        return min(self.brokers)

    @property
    def any_controller(self) -> int:
        return min(self.controllers)

    def partitions(self, topic: str, *, fresh: bool = False
                   ) -> dict[int, tuple[int, tuple[int, ...]]]:
        """partition -> (leader, replicas) as every broker sees it (waits until they agree
        and every partition has a leader: creation reaches the brokers asynchronously).
        Remembered once found (no case moves a leader); ``fresh`` asks again."""
        if not fresh and topic in self._placements:
            return self._placements[topic]
        request = MetadataRequest(topics=(MetadataRequestTopic(name=topic),),
                                  allow_auto_topic_creation=False)

        def agreed() -> dict[int, tuple[int, tuple[int, ...]]] | None:
            seen = []
            for node in sorted(self.brokers):
                answer = self.answer(node, request, 12)
                seen.append({p.partition_index: (p.leader_id, tuple(p.replica_nodes))
                             for t in answer.topics if t.error_code == 0
                             for p in t.partitions})
            first = seen[0]
            if first and all(s == first for s in seen) and all(
                    leader >= 0 for leader, _ in first.values()):
                return first
            return None

        found = until(agreed, f"{self.name}: every broker agreeing on {topic}'s leaders")
        self._placements[topic] = found
        return found

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.partitions(topic)[partition][0]

    def follower(self, topic: str, partition: int = 0) -> int:
        leader, replicas = self.partitions(topic)[partition]
        return next(r for r in replicas if r != leader)

    def not_a_replica(self, topic: str, partition: int = 0) -> int | None:
        _leader, replicas = self.partitions(topic)[partition]
        return next((b for b in sorted(self.brokers) if b not in replicas), None)

    def coordinator(self, key: str, key_type: int = 0) -> int:
        """The coordinator of a group (key type 0) or transactional id (1), waiting while
        the answer is retriable (COORDINATOR_NOT_AVAILABLE while the internal topic is
        created); CaseError at any other refusal."""
        def found() -> tuple[int] | None:
            answer = self.answer(self.any_broker, FindCoordinatorRequest(
                key=key, key_type=key_type), 3)
            if answer.error_code == 0:
                return (int(answer.node_id),)
            if answer.error_code not in (14, 15):
                raise CaseError(f"{self.name}: no coordinator for {key!r}: {answer}")
            return None

        (node,) = until(found, f"{self.name}: a coordinator for {key!r}")
        return node

    def create_topic(self, name: str, partitions: int, replication: int,
                     configs: Sequence[Any] = ()) -> None:
        """Create (or find already created) a topic and wait for its leaders."""
        answer = self.answer(self.any_broker, CreateTopicsRequest(topics=(
            CreateTopicsRequestTopic(name=name, num_partitions=partitions,
                                     replication_factor=replication, configs=tuple(configs)),
        ), timeout_ms=30000), 5)
        if answer.topics[0].error_code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
            raise CaseError(f"{self.name}: creating {name}: {answer}")
        self.partitions(name, fresh=True)


Run = Callable[[Session, int], "Outcome | Sequence[Outcome]"]


@attrs.frozen
class Case:
    """Requests of one api key: ``run(session, version)`` returns what is compared.

    ``versions`` None means every version the listener's pykraft table advertises."""

    name: str
    api_key: int
    run: Run
    versions: tuple[int, ...] | None = None
    listener: Listener = "broker"
    about: str = ""

    def run_versions(self) -> tuple[int, ...]:
        if self.versions is not None:
            return self.versions
        table = CLIENT_LISTENER_VERSIONS if self.listener == "broker" else \
            CONTROLLER_LISTENER_VERSIONS
        low, high = table[self.api_key]
        return tuple(range(low, high + 1))

    def ids(self) -> list[str]:
        return [f"{self.name}@v{v}" for v in self.run_versions()]

    @property
    def api_name(self) -> str:
        return ApiKey(self.api_key).name


@attrs.frozen
class Result:
    case_id: str
    kafka: tuple[Outcome, ...]
    pykraft: tuple[Outcome, ...]
    differences: tuple[Difference, ...]


def run_case(case: Case, version: int, kafka: Session, pykraft: Session) -> Result:
    outcomes = []
    for session in (kafka, pykraft):
        got = case.run(session, version)
        outcomes.append(tuple(got) if isinstance(got, Sequence) else (got,))
    return compare_case(f"{case.name}@v{version}", outcomes[0], outcomes[1],
                        kafka.cluster, pykraft.cluster)


def compare_case(case_id: str, kafka: tuple[Outcome, ...], pykraft: tuple[Outcome, ...],
                 kafka_cluster: Cluster, pykraft_cluster: Cluster) -> Result:
    found = differences(normalise(kafka, kafka_cluster), normalise(pykraft, pykraft_cluster))
    return Result(case_id, kafka, pykraft, tuple(found))
