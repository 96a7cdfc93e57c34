"""The metadata plane under random faults: kill -9, SIGTERM, pauses and partitions of
controllers and brokers while topics are created and deleted.

3 controllers and 3 brokers run as real processes, every link to a controller through a
proxy that the nemesis can cut. A creator thread keeps creating (and now and then deleting)
topics through the active controller and notes what was acknowledged; an observer thread
samples every node's image and every controller's view of the quorum. A seeded nemesis
runs a bounded number of rounds; each fault lasts until its effect is seen (a new leader
elected, a broker fenced) or a deadline, then is undone. Afterwards every node must hold
the same image, and:

* every acknowledged creation is there once, with its partitions, unless its deletion was
  acknowledged; every acknowledged deletion is gone (no acknowledged write lost);
* two images at the same offset, on any node at any time, have the same digest
  (committed entries never change);
* a partition's leader epoch never decreases as the offset grows, and a leader is always
  in the ISR (or the partition has none);
* no two controllers led in the same epoch (one leader per epoch);
* the controllers' metadata logs are equal once frozen.

``PYKRAFT_FAULT_SEED=N`` replays one seed's schedule (timing still varies: real processes).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import pytest
import trio

from deploy import CutMode, LocalCluster
from deploy.probes import metrics_at
from quorum.client import ClientError, TrioKafkaConnection
from quorum.config import TEST_PROFILE_OVERRIDES
from quorum.controller_client import error_codes_in
from quorum.describe import DescribeQuorumError, quorum_info_from_response
from quorum.wire.error_codes import Errors
from quorum.wire.messages import CreateTopicsRequest, CreateTopicsRequestTopic, DeleteTopicsRequest
from tests.integration.checks import StartCluster, assert_logs_agree
from tests.integration.test_brokers import broker_states, describe_image

_SEEDS: Final = (1, 2)
_ROUNDS: Final = 8
_FAULT_S: Final = 6.0  # the longest a fault waits for its effect before it is undone
_SETTLE_S: Final = 45.0
_PARTITIONS: Final = 3
_FACTOR: Final = 2  # creatable with one broker down
_FETCH_TIMEOUT_MS: Final = int(TEST_PROFILE_OVERRIDES["controller.quorum.fetch.timeout.ms"])
_API_TIMEOUT_S: Final = 4.0
_REQUEST_TIMEOUT_S: Final = 1.5


def _seeds() -> tuple[int, ...]:
    only = os.environ.get("PYKRAFT_FAULT_SEED")
    return (int(only),) if only else _SEEDS


# -- the workload ----------------------------------------------------------------------------


@attrs.define
class Outcomes:
    """What the creator was told. A change whose request timed out (or was resent after a
    failover and then found done) is in doubt: either outcome is allowed."""

    created: set[str] = attrs.field(factory=set)
    deleted: set[str] = attrs.field(factory=set)
    in_doubt: set[str] = attrs.field(factory=set)
    delete_in_doubt: set[str] = attrs.field(factory=set)
    lock: threading.Lock = attrs.field(factory=threading.Lock)


class Unanswered(Exception):
    """No controller answered within the api timeout: the outcome is in doubt."""


class DirectControllers:
    """Sends each request straight to the controller that says it is active, trying each
    in turn on NOT_CONTROLLER or a broken connection. Straight, not through the addresses a
    controller lists (the voters' proxy addresses here): a leader cut off from its peers
    must still get client requests, as it would on a real network split."""

    def __init__(self, addresses: list[tuple[str, int]]) -> None:
        self._addresses = addresses
        self._current = 0
        self._conn: TrioKafkaConnection | None = None

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.aclose()
            self._conn = None

    async def call(self, request: Any) -> Any:
        with trio.move_on_after(_API_TIMEOUT_S):
            while True:
                try:
                    with trio.fail_after(_REQUEST_TIMEOUT_S):
                        if self._conn is None:
                            self._conn = await TrioKafkaConnection.connect(
                                *self._addresses[self._current]
                            )
                        response = await self._conn.request(request)
                    if Errors.NOT_CONTROLLER not in error_codes_in(response):
                        return response
                except (ClientError, OSError, trio.TooSlowError):
                    pass
                await self.aclose()
                self._current = (self._current + 1) % len(self._addresses)
                await trio.sleep(0.02)
        raise Unanswered(type(request).__name__)


UNANSWERED: Final = -1


def _create(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(CreateTopicsRequestTopic(
            name=name, num_partitions=_PARTITIONS, replication_factor=_FACTOR
        ),),
        timeout_ms=3_000,
    )


def _delete(name: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topic_names=(name,), timeout_ms=3_000)


async def _error_code(controllers: DirectControllers, request: Any) -> int:
    """The one topic's error code in the answer; UNANSWERED if no controller answered."""
    try:
        response = await controllers.call(request)
    except Unanswered:
        return UNANSWERED
    [result] = getattr(response, "topics", None) or response.responses
    code: int = result.error_code
    return code


def run_creator(cluster: LocalCluster, outcomes: Outcomes, stop: threading.Event,
                rng: random.Random) -> None:
    async def loop() -> None:
        controllers = DirectControllers([cluster.address(n) for n in cluster.node_ids])
        index = 0
        try:
            while not stop.is_set():
                with outcomes.lock:
                    deletable = sorted(
                        outcomes.created - outcomes.deleted - outcomes.delete_in_doubt
                    )
                if deletable and rng.random() < 0.2:
                    name = rng.choice(deletable)
                    code = await _error_code(controllers, _delete(name))
                    with outcomes.lock:
                        if code == Errors.NONE:
                            outcomes.deleted.add(name)
                        else:
                            outcomes.delete_in_doubt.add(name)
                    continue
                name = f"t{index}"
                index += 1
                code = await _error_code(controllers, _create(name))
                with outcomes.lock:
                    if code == Errors.NONE:
                        outcomes.created.add(name)
                    elif code in (UNANSWERED, Errors.REQUEST_TIMED_OUT,
                                  Errors.TOPIC_ALREADY_EXISTS):
                        outcomes.in_doubt.add(name)
                    else:
                        # refusals (too few live brokers) write nothing
                        assert code == Errors.INVALID_REPLICATION_FACTOR, (name, code)
        finally:
            await controllers.aclose()

    trio.run(loop)


# -- the observer ------------------------------------------------------------------------------


@attrs.define
class Observations:
    # image offset -> digest, over every node and every sample
    digests: dict[int, str] = attrs.field(factory=dict)
    # (offset, topic id, partition) -> (leader, leader epoch, isr), from every sample
    partitions: dict[tuple[int, str, int], tuple[int, int, tuple[int, ...]]] = attrs.field(
        factory=dict
    )
    # quorum epoch -> controllers that said they lead in it
    leaders: dict[int, set[int]] = attrs.field(factory=dict)
    problems: list[str] = attrs.field(factory=list)
    samples: int = 0


def _sample_image(cluster: LocalCluster, node: int, seen: Observations) -> None:
    if not cluster.is_running(node):
        return
    answer = describe_image(cluster, node, include_image=True)
    if answer is None or answer.image_json is None:
        return
    seen.samples += 1
    known = seen.digests.setdefault(answer.offset, answer.digest)
    if known != answer.digest:
        seen.problems.append(f"node {node}: offset {answer.offset} has digest "
                             f"{answer.digest[:12]}, another image there had {known[:12]}")
    for topic in json.loads(answer.image_json)["topics"]:
        for p in topic["partitions"]:
            if p["leader"] != -1 and p["leader"] not in p["isr"]:
                seen.problems.append(f"node {node} at {answer.offset}: leader outside ISR {p}")
            key = (answer.offset, topic["topicId"], p["partition"])
            seen.partitions[key] = (p["leader"], p["leaderEpoch"], tuple(p["isr"]))


def _sample_quorum(cluster: LocalCluster, node: int, seen: Observations) -> None:
    response = cluster.quorum_answer(node, timeout=1.0)
    if response is None:
        return
    try:
        info = quorum_info_from_response(response)
    except DescribeQuorumError:
        return  # not the leader
    seen.leaders.setdefault(info.leader_epoch, set()).add(info.leader_id)


def run_observer(cluster: LocalCluster, seen: Observations, stop: threading.Event) -> None:
    nodes = cluster.node_ids + cluster.broker_ids
    while not stop.wait(0.1):
        for node in nodes:
            _sample_image(cluster, node, seen)
        for node in cluster.node_ids:
            _sample_quorum(cluster, node, seen)


def epochs_never_decrease(seen: Observations) -> list[str]:
    by_partition: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for (offset, topic_id, index), (_, epoch, _) in seen.partitions.items():
        by_partition.setdefault((topic_id, index), []).append((offset, epoch))
    problems = []
    for key, history in by_partition.items():
        history.sort()
        for (o1, e1), (o2, e2) in itertools.pairwise(history):
            if e2 < e1:
                problems.append(f"partition {key}: leader epoch {e1} at {o1}, {e2} at {o2}")
    return problems


# -- the nemesis -------------------------------------------------------------------------------


def _leader_epoch(cluster: LocalCluster) -> tuple[int, int] | None:
    found = cluster.find_leader()
    return None if found is None else (found[0], found[1].leader_epoch)


def _until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _new_leader_after(cluster: LocalCluster, epoch: int, among: list[int]) -> Callable[[], bool]:
    def elected() -> bool:
        found = cluster.find_leader(among=among)
        return found is not None and found[1].leader_epoch > epoch

    return elected


def _silent(cluster: LocalCluster, follower: int, ms: int) -> Callable[[], bool]:
    """Whether the leader has had no fetch from ``follower`` for ``ms`` (wall clock)."""
    def silent() -> bool:
        found = cluster.find_leader()
        if found is None:
            return False
        rows = [v for v in found[1].voters if v.replica_id == follower]
        last = rows[0].last_fetch_timestamp if rows else None
        return last is None or time.time() * 1000 - last >= ms

    return silent


def _fenced(cluster: LocalCluster, broker: int) -> Callable[[], bool]:
    def fenced() -> bool:
        leader = _leader_epoch(cluster)
        if leader is None:
            return False
        answer = describe_image(cluster, leader[0], include_image=True)
        if answer is None or answer.image_json is None:
            return False
        return broker_states(json.loads(answer.image_json)).get(broker, False)

    return fenced


FAULTS: Final = ("kill-leader", "stop-leader", "pause-leader", "isolate-leader",
                  "isolate-follower", "kill-broker", "stop-broker", "isolate-broker")


def schedule_of(rng: random.Random) -> list[str]:
    """Every kind of fault once, in a random order, then random ones up to ``_ROUNDS``."""
    kinds = list(FAULTS)
    rng.shuffle(kinds)
    return kinds + [rng.choice(FAULTS) for _ in range(_ROUNDS - len(kinds))]


def one_fault(cluster: LocalCluster, kind: str, rng: random.Random, log: list[str]) -> None:
    """Inject one fault, wait for its effect (bounded), undo it."""
    current = _leader_epoch(cluster)
    assert current is not None, "each fault starts from a working quorum"
    leader, epoch = current
    others = [n for n in cluster.node_ids if n != leader]
    broker = rng.choice(cluster.broker_ids)
    log.append(f"{kind} (leader {leader}, epoch {epoch}, broker {broker})")
    print(f"{time.strftime('%H:%M:%S')} fault: {log[-1]}")  # shown when the test fails
    if kind == "kill-leader":
        cluster.kill(leader)
        _until(_new_leader_after(cluster, epoch, others), _FAULT_S)
        cluster.start_node(leader)
    elif kind == "stop-leader":
        # SIGTERM: the leader hands over (EndQuorumEpoch) and exits once another voter leads
        code = cluster.stop(leader)
        assert code == 0, f"controller {leader} exited {code} on SIGTERM\n{cluster.log_tail(leader)}"
        _until(_new_leader_after(cluster, epoch, others), _FAULT_S)
        cluster.start_node(leader)
    elif kind == "pause-leader":
        cluster.pause(leader)
        _until(_new_leader_after(cluster, epoch, others), _FAULT_S)
        cluster.resume(leader)
    elif kind == "isolate-leader":
        cluster.isolate(leader, rng.choice([CutMode.DROP, CutMode.RESET]))
        _until(_new_leader_after(cluster, epoch, others), _FAULT_S)
        cluster.heal()
    elif kind == "isolate-follower":
        follower = rng.choice(others)
        cluster.isolate(follower, rng.choice([CutMode.DROP, CutMode.RESET]))
        # until its fetch timeout passed (it then pre-votes, and does again once healed)
        _until(_silent(cluster, follower, _FETCH_TIMEOUT_MS), _FAULT_S)
        cluster.heal()
    elif kind == "kill-broker":
        cluster.kill(broker)
        _until(_fenced(cluster, broker), _FAULT_S)
        cluster.start_node(broker)
    elif kind == "stop-broker":
        # SIGTERM: controlled shutdown moves its leaderships away before it exits
        code = cluster.stop(broker)
        assert code == 0, f"broker {broker} exited {code} on SIGTERM\n{cluster.log_tail(broker)}"
        _until(_fenced(cluster, broker), _FAULT_S)
        cluster.start_node(broker)
    else:
        assert kind == "isolate-broker", kind
        for controller in cluster.node_ids:
            cluster.cut(broker, controller, CutMode.DROP)
        _until(_fenced(cluster, broker), _FAULT_S)
        cluster.heal()


# -- the test -----------------------------------------------------------------------------------


def _settle(cluster: LocalCluster) -> dict[str, Any]:
    """Every node up and holding one image; that image."""
    brokers = cluster.broker_ids

    def agreed() -> dict[str, Any] | None:
        answers = [describe_image(cluster, n, include_image=True)
                   for n in cluster.node_ids + brokers]
        if any(a is None or a.image_json is None for a in answers):
            return None
        if len({(a.offset, a.digest) for a in answers if a is not None}) != 1:
            return None
        image: dict[str, Any] = json.loads(answers[0].image_json)  # type: ignore[union-attr,arg-type]
        return image if broker_states(image) == dict.fromkeys(brokers, False) else None

    return cluster.wait_for(agreed, "every node unfenced and on one image", _SETTLE_S)


def assert_metrics_agree(cluster: LocalCluster, image: dict[str, Any]) -> None:
    """Every node's /metrics tells the settled image, and one controller is active."""
    nodes = cluster.node_ids + cluster.broker_ids

    def digests_and_offsets(samples: dict[int, dict[str, float]]) -> tuple[set[str], set[float]]:
        digests = {key.split('"')[1] for s in samples.values() for key in s
                   if key.startswith("pykraft_metadata_image_info")}
        return digests, {s["pykraft_metadata_image_offset"] for s in samples.values()}

    def scraped() -> dict[int, dict[str, float]] | None:
        found = {n: metrics_at(cluster.metrics_address(n), timeout=2.0) for n in nodes}
        if None in found.values():
            return None
        samples = {n: s for n, s in found.items() if s}
        # the data plane's ISR changes and preferred-leader elections may still be
        # committing after the faults: the scrape that counts is one where all agree
        digests, offsets = digests_and_offsets(samples)
        return samples if len(digests) == 1 and len(offsets) == 1 else None

    samples = cluster.wait_for(scraped, "every node's metrics telling one image", _SETTLE_S)
    partitions = sum(len(t["partitions"]) for t in image["topics"])
    for node, s in samples.items():
        assert s["kafka_controller_global_topic_count"] == len(image["topics"]), node
        assert s["kafka_controller_global_partition_count"] == partitions, node
        assert s["kafka_controller_fenced_broker_count"] == 0, node
    active = [n for n in cluster.node_ids if samples[n]["kafka_controller_active_controller_count"]]
    assert len(active) == 1, active


@pytest.fixture
def threads() -> Iterator[list[threading.Thread]]:
    started: list[threading.Thread] = []
    yield started
    for thread in started:
        thread.join(timeout=30)


@pytest.mark.parametrize("seed", _seeds())
def test_no_acknowledged_metadata_change_is_lost_under_random_faults(
    start_cluster: StartCluster, threads: list[threading.Thread], seed: int
) -> None:
    rng = random.Random(seed)
    cluster = start_cluster(controllers=3, brokers=3, link_proxies=True, metrics=True)
    _settle(cluster)
    outcomes, seen, stop = Outcomes(), Observations(), threading.Event()
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
        return run

    creator_rng = random.Random(rng.random())
    threads += [
        threading.Thread(target=guarded(lambda: run_creator(cluster, outcomes, stop, creator_rng))),
        threading.Thread(target=guarded(lambda: run_observer(cluster, seen, stop))),
    ]
    for thread in threads:
        thread.start()
    schedule: list[str] = []
    try:
        for kind in schedule_of(rng):
            one_fault(cluster, kind, rng, schedule)
            # between faults: a working quorum again, so every round starts from one leader
            cluster.wait_for(lambda: _leader_epoch(cluster), "a leader after the fault", _SETTLE_S)
        cluster.heal()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    # every node the nemesis stopped was started again: none may have died on its own
    for node in cluster.node_ids + cluster.broker_ids:
        assert cluster.is_running(node), f"seed {seed}: node {node} died\n{cluster.log_tail(node)}"
    # the workload stopped: the nodes can now agree on one image
    final = _settle(cluster)
    assert not errors, f"seed {seed}, schedule {schedule}: {errors!r}"
    print(f"seed {seed}: {schedule}; {len(outcomes.created)} created, {len(outcomes.deleted)} "
          f"deleted, {len(outcomes.in_doubt)} in doubt, {seen.samples} image samples")

    present = {t["name"]: t for t in final["topics"]}
    for name in outcomes.created - outcomes.deleted - outcomes.delete_in_doubt:
        assert name in present, f"seed {seed}: acknowledged topic {name} lost ({schedule})"
        assert len(present[name]["partitions"]) == _PARTITIONS
    for name in outcomes.deleted:
        assert name not in present, f"seed {seed}: deleted topic {name} is back ({schedule})"
    unexplained = set(present) - outcomes.created - outcomes.in_doubt
    assert not unexplained, f"seed {seed}: topics nobody created: {unexplained}"
    assert len(outcomes.created) >= _ROUNDS, "the workload barely ran: the test saw too little"

    assert not seen.problems, f"seed {seed} ({schedule}): {seen.problems[:5]}"
    assert epochs_never_decrease(seen) == []
    doubled = {epoch: ids for epoch, ids in seen.leaders.items() if len(ids) > 1}
    assert not doubled, f"seed {seed}: two leaders in one epoch {doubled}"
    assert_metrics_agree(cluster, final)
    assert_logs_agree(cluster, {})
