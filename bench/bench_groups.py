"""Consumer groups: rebalance time, coordinator failover, OffsetCommit rate.

Run ``python -m bench.bench_groups [--runs 3] [--profiles kafka,test] [--partitions 12]
[--commit-seconds 5] [--in-flight 16] [--out FILE]``.

Each run, for each settings profile: a fresh cluster of 3 controllers and 3 brokers (real
processes on loopback, ``deploy.LocalCluster``), one topic of ``--partitions``
partitions at RF 3 (nothing produced to it), and confluent-kafka (librdkafka) consumers
in this process, one thread each, with librdkafka's default assignors (range, eager).
Profiles: ``kafka`` is Kafka's defaults on both sides (broker.session.timeout.ms 9 s,
group.initial.rebalance.delay.ms 3 s; the client's session.timeout.ms 45 s,
heartbeat.interval.ms 3 s); ``test`` is the test profile (``quorum/config/profiles.py``:
fencing after 2 s, no initial rebalance delay) with the clients the client tests run
(session 6 s, heartbeat 0.5 s). Before anything is timed, a warm-up commit creates
``__consumer_offsets`` and every one of its partitions gets a leader and a full ISR.

1. rebalance, one group: 4 consumers subscribe together to an empty group, until each
   holds its part (their ``on_assign`` callbacks: disjoint, non-empty, every partition
   owned); one of them leaves (``close()``: LeaveGroup), until the other 3 hold new
   parts; a new one joins the 3, until all 4 do. Each time from the subscribe or close
   to the last member's ``on_assign``.
2. OffsetCommit rate, another group: one member commits an offset of one of its
   partitions for ``--commit-seconds``, synchronously one at a time (rate, p50, p99),
   then asynchronously with at most ``--in-flight`` unanswered (librdkafka pipelines
   them on its coordinator connection).
3. failover, a third group: its member commits once, then the broker that coordinates
   the group (FindCoordinator) is killed with SIGKILL; the member retries synchronous
   commits until one succeeds. Beside it, a watcher polling a live broker's Metadata
   every 20 ms gives the time until the killed broker is fenced (no longer listed),
   until the group's ``__consumer_offsets`` partition has another leader, and until that
   leader answers OffsetFetch for the group without an error (the group loaded): the
   brokers' share, apart from librdkafka's own retries and backoff.

Reported: median [min-max] over runs per profile, and one JSON line with every run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Final

import attrs
import cattrs
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.group_figures import AssignmentEvent, GroupRun, figure_rows, percentile, settled_at
from broker.group.partitioning import offsets_partition_for
from deploy import ClusterSpec, LocalCluster
from quorum.client import BlockingKafkaConnection, ClientError
from quorum.wire.messages import (
    FindCoordinatorRequest,
    MetadataRequest,
    MetadataRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
)

__all__ = ["main"]

TOPIC: Final = "bench-groups"
OFFSETS_TOPIC: Final = "__consumer_offsets"
_TIMEOUT_S: Final = 60.0
_REQUEST_S: Final = 10.0
# a rebalance at Kafka's defaults waits out heartbeats (3 s) and the initial delay (3 s)
_SETTLE_BOUND_S: Final = 120.0
# at Kafka's defaults a killed broker is fenced after 9 s; librdkafka backs off between tries
_FAILOVER_BOUND_S: Final = 180.0
_WATCH_EVERY_S: Final = 0.02
_CHECK_EVERY_S: Final = 0.01
_MEMBERS: Final = 4


@attrs.frozen
class Profile:
    name: str
    label: str
    test_profile: bool
    session_timeout_ms: int
    heartbeat_interval_ms: int


PROFILES: Final = {
    "kafka": Profile("kafka", "Kafka's defaults (fence 9 s, session 45 s)", False, 45_000, 3_000),
    "test": Profile("test", "test profile (fence 2 s, session 6 s)", True, 6_000, 500),
}


# -- the cluster, through pykraft's own wire client -----------------------------------------


def _ask(address: tuple[str, int], message: object, version: int) -> Any:
    host, port = address
    with BlockingKafkaConnection.connect(host, port, timeout=_REQUEST_S) as conn:
        return conn.request(message, version=version, timeout=_REQUEST_S)


def _metadata(topic: str) -> MetadataRequest:
    return MetadataRequest(topics=(MetadataRequestTopic(name=topic),),
                           allow_auto_topic_creation=False)


def _until(condition: Callable[[], bool], what: str, bound_s: float) -> None:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (OSError, ClientError, KafkaException):
            pass  # a broker not answering yet: asked again
        time.sleep(0.1)
    raise RuntimeError(f"no {what} after {bound_s} s")


def _whole(cluster: LocalCluster, topic: str, partitions: int | None = None) -> bool:
    """Every partition of ``topic`` has a leader and a full ISR in a broker's image."""
    answer = _ask(cluster.address(cluster.broker_ids[0]), _metadata(topic), 9)
    (found,) = answer.topics
    return (bool(found.partitions) and (partitions is None or len(found.partitions) == partitions)
            and all(p.leader_id >= 0 and len(p.isr_nodes) == 3 for p in found.partitions))


def coordinator_of(cluster: LocalCluster, group: str) -> int:
    found: list[int] = []

    def answered() -> bool:
        answer = _ask(cluster.address(cluster.broker_ids[0]),
                      FindCoordinatorRequest(coordinator_keys=(group,)), 4)
        (coordinator,) = answer.coordinators
        if coordinator.error_code == 0:
            found.append(coordinator.node_id)
        return bool(found)

    _until(answered, f"coordinator of {group}", _TIMEOUT_S)
    return found[0]


def create_topic(bootstrap: str, cluster: LocalCluster, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.create_topics([NewTopic(TOPIC, partitions, 3)],
                                    request_timeout=_TIMEOUT_S).values()
    future.result(_TIMEOUT_S)
    _until(lambda: _whole(cluster, TOPIC, partitions), f"full ISR of {TOPIC}", _TIMEOUT_S)


def warm_up_offsets(bootstrap: str, cluster: LocalCluster) -> None:
    """``__consumer_offsets`` created (by a first commit) and whole, before any timing."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-warm-up",
                         "enable.auto.commit": False})
    try:
        def committed() -> bool:
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)
            return True

        _until(committed, "first commit", _TIMEOUT_S)
    finally:
        consumer.close()
    _until(lambda: _whole(cluster, OFFSETS_TOPIC), f"full ISR of {OFFSETS_TOPIC}", _TIMEOUT_S)


# -- group members ----------------------------------------------------------------------------


def _consumer_config(bootstrap: str, group: str, profile: Profile, name: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": profile.session_timeout_ms,
            "heartbeat.interval.ms": profile.heartbeat_interval_ms}


class Member:
    """One consumer polling in a thread of its own; its rebalance callbacks recorded."""

    def __init__(self, name: str, bootstrap: str, group: str, profile: Profile) -> None:
        self.name = name
        self.events: list[AssignmentEvent] = []
        self._consumer = Consumer(_consumer_config(bootstrap, group, profile, name))
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.error = ""

    def start(self) -> None:
        self._thread.start()

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.events.append((time.monotonic(), frozenset(p.partition for p in partitions)))

    def _revoked(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self.events.append((time.monotonic(), frozenset()))

    def _serve(self) -> None:
        try:
            self._consumer.subscribe([TOPIC], on_assign=self._assigned,
                                     on_revoke=self._revoked, on_lost=self._revoked)
            while not self._stopping.is_set():
                self._consumer.poll(0.02)
        except Exception as exc:  # said by the phase that waits on this member
            self.error = repr(exc)
        finally:
            self._consumer.close()

    def leave(self) -> None:
        """close() in the member's thread: LeaveGroup, then the consumer is gone."""
        if self._thread.ident is None:  # never started: nothing polls the consumer
            self._consumer.close()
            return
        self._stopping.set()
        self._thread.join(_TIMEOUT_S)


def wait_settled(members: Sequence[Member], since: float, partitions: int, what: str) -> float:
    deadline = since + _SETTLE_BOUND_S
    while time.monotonic() < deadline:
        failed = [m.error for m in members if m.error]
        if failed:
            raise RuntimeError(f"{what}: a member failed: {failed[0]}")
        at = settled_at({m.name: list(m.events) for m in members}, since, partitions)
        if at is not None:
            return at - since
        time.sleep(_CHECK_EVERY_S)
    raise RuntimeError(f"{what}: the group did not settle in {_SETTLE_BOUND_S} s: "
                       f"{ {m.name: m.events[-1:] for m in members} }")


def rebalance_phase(bootstrap: str, profile: Profile, partitions: int
                    ) -> tuple[float, float, float]:
    """(form, leave, join) seconds."""
    group = f"bench-rebalance-{profile.name}"
    members = [Member(f"member-{i}", bootstrap, group, profile) for i in range(_MEMBERS)]
    try:
        since = time.monotonic()
        for member in members:
            member.start()
        form = wait_settled(members, since, partitions, "4 join")
        leaving = members.pop()
        since = time.monotonic()
        leaving.leave()
        leave = wait_settled(members, since, partitions, "1 leaves")
        members.append(Member(f"member-{_MEMBERS}", bootstrap, group, profile))
        since = time.monotonic()
        members[-1].start()
        join = wait_settled(members, since, partitions, "a 4th joins")
    finally:
        for member in members:
            member.leave()
    return form, leave, join


# -- one committing member --------------------------------------------------------------------


class Committer:
    """A member that polls and commits in the caller's thread."""

    def __init__(self, bootstrap: str, group: str, profile: Profile) -> None:
        self.done = 0
        self.failed = 0
        self.first_error = ""
        config = _consumer_config(bootstrap, group, profile, f"{group}-committer")
        self.consumer = Consumer({**config, "on_commit": self._answered})
        self.consumer.subscribe([TOPIC])
        self.offset = 0
        deadline = time.monotonic() + _SETTLE_BOUND_S
        while not self.consumer.assignment():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{group}: no assignment in {_SETTLE_BOUND_S} s")
            self.consumer.poll(0.05)
        self.partition = self.consumer.assignment()[0].partition

    def _answered(self, error: Any, _partitions: list[TopicPartition]) -> None:
        if error is None:
            self.done += 1
        else:
            self.failed += 1
            self.first_error = self.first_error or str(error)

    def commit(self, *, asynchronous: bool = False) -> None:
        """Commit the next offset (a new value each time, so that no commit is a no-op)."""
        self.offset += 1
        offsets = [TopicPartition(TOPIC, self.partition, self.offset)]
        if asynchronous:
            self.consumer.commit(offsets=offsets, asynchronous=True)
        else:
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def close(self) -> None:
        self.consumer.close()


def commit_phase(bootstrap: str, profile: Profile, seconds: float, in_flight: int
                 ) -> tuple[float, list[float], float]:
    """(sync commits/s, sync latencies in s, async commits/s)."""
    committer = Committer(bootstrap, f"bench-commit-{profile.name}", profile)
    try:
        for _ in range(50):  # warm up: the coordinator's connection open
            committer.commit()
        latencies = []
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            began = time.perf_counter()
            committer.commit()
            latencies.append(time.perf_counter() - began)
        sync_rate = len(latencies) / (time.monotonic() - start)
        committer.consumer.poll(0)  # callbacks of the sync commits, if any, served now
        committer.done = committer.failed = 0
        issued = 0
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            if issued - committer.done - committer.failed >= in_flight:
                committer.consumer.poll(0.001)
                continue
            committer.commit(asynchronous=True)
            issued += 1
        drain = time.monotonic() + _TIMEOUT_S
        while committer.done + committer.failed < issued and time.monotonic() < drain:
            committer.consumer.poll(0.01)
        elapsed = time.monotonic() - start
        if committer.failed or committer.done < issued:
            raise RuntimeError(f"async commits: {committer.done} of {issued} answered, "
                               f"{committer.failed} failed ({committer.first_error})")
        return sync_rate, latencies, committer.done / elapsed
    finally:
        committer.close()


# -- coordinator failover ---------------------------------------------------------------------


class FenceWatcher:
    """Polls a live broker's Metadata: when the killed broker leaves the broker list
    (fenced: Metadata lists unfenced brokers only) and when ``partition`` of
    ``__consumer_offsets`` gets a leader other than the killed broker; then asks that
    leader OffsetFetch for ``group`` until it answers without an error (the group loaded,
    no COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR): what the brokers take, apart
    from the client's retries."""

    def __init__(self, addresses: dict[int, tuple[str, int]], live: int, dead: int,
                 partition: int, group: str) -> None:
        self.addresses = addresses
        self.live = live
        self.dead = dead
        self.partition = partition
        self.group = group
        self.fenced_at: float | None = None
        self.led_at: float | None = None
        self.loaded_at: float | None = None
        self.leader = -1
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fence-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _done(self) -> bool:
        return self._stopping.is_set() or None not in (self.fenced_at, self.led_at,
                                                        self.loaded_at)

    def _watch(self) -> None:
        host, port = self.addresses[self.live]
        request = _metadata(OFFSETS_TOPIC)
        with BlockingKafkaConnection.connect(host, port, timeout=_REQUEST_S) as conn:
            while not self._done():
                answer: Any = conn.request(request, version=9, timeout=_REQUEST_S)
                now = time.monotonic()
                if self.fenced_at is None and all(b.node_id != self.dead for b in answer.brokers):
                    self.fenced_at = now
                (topic,) = answer.topics
                leaders = {p.partition_index: p.leader_id for p in topic.partitions}
                if self.led_at is None and leaders.get(self.partition, -1) not in (-1, self.dead):
                    self.led_at = now
                    self.leader = leaders[self.partition]
                if self.led_at is not None and self.loaded_at is None and self._loaded():
                    self.loaded_at = time.monotonic()
                time.sleep(_WATCH_EVERY_S)

    def _loaded(self) -> bool:
        request = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=self.group,
                                                                     topics=None),))
        try:
            answer = _ask(self.addresses[self.leader], request, 8)
        except (OSError, ClientError):
            return False  # not serving yet: asked again on the next round
        (group,) = answer.groups
        return bool(group.error_code == 0)

    def stop(self, bound_s: float) -> None:
        self._thread.join(bound_s)
        self._stopping.set()
        self._thread.join(_REQUEST_S)


def _offsets_partitions(cluster: LocalCluster) -> int:
    answer = _ask(cluster.address(cluster.broker_ids[0]), _metadata(OFFSETS_TOPIC), 9)
    (topic,) = answer.topics
    return len(topic.partitions)


def failover_phase(cluster: LocalCluster, bootstrap: str, profile: Profile
                   ) -> tuple[float, float, float, float, dict[str, int]]:
    """(first commit, fenced, new offsets leader, the group loaded there) seconds after the
    kill, and the errors the committer saw."""
    group = f"bench-failover-{profile.name}"
    committer = Committer(bootstrap, group, profile)
    errors: Counter[str] = Counter()
    try:
        committer.commit()
        coordinator = coordinator_of(cluster, group)
        live = next(b for b in cluster.broker_ids if b != coordinator)
        watcher = FenceWatcher({b: cluster.address(b) for b in cluster.broker_ids}, live,
                               coordinator,
                               offsets_partition_for(group, _offsets_partitions(cluster)), group)
        watcher.start()
        killed_at = time.monotonic()
        cluster.kill(coordinator)
        committed_at = None
        while time.monotonic() - killed_at < _FAILOVER_BOUND_S:
            committer.consumer.poll(0)
            try:
                committer.commit()
            except KafkaException as exc:
                errors[exc.args[0].name() if exc.args else repr(exc)] += 1
                time.sleep(_CHECK_EVERY_S)
                continue
            committed_at = time.monotonic()
            break
        watcher.stop(_FAILOVER_BOUND_S)
    finally:
        committer.close()
    if committed_at is None or watcher.fenced_at is None or watcher.led_at is None \
            or watcher.loaded_at is None:
        raise RuntimeError(f"failover: commit {committed_at}, fenced {watcher.fenced_at}, "
                           f"new leader {watcher.led_at}, loaded {watcher.loaded_at} "
                           f"(errors {dict(errors)})")
    return (committed_at - killed_at, watcher.fenced_at - killed_at,
            watcher.led_at - killed_at, watcher.loaded_at - killed_at, dict(errors))


# -- one run ----------------------------------------------------------------------------------


def one_run(profile: Profile, *, partitions: int, commit_seconds: float, in_flight: int,
            base_dir: Path | None, properties: dict[str, str],
            say: Callable[[str], None]) -> GroupRun:
    base = Path(tempfile.mkdtemp(prefix=f"groups-{profile.name}-", dir=base_dir))
    spec = ClusterSpec(controllers=3, brokers=3, test_profile=profile.test_profile,
                       properties=properties, ready_timeout_s=_TIMEOUT_S)
    done = False
    try:
        with LocalCluster(base / "cluster", spec) as cluster:
            bootstrap = ",".join(f"{h}:{p}" for h, p in map(cluster.address, cluster.broker_ids))
            create_topic(bootstrap, cluster, partitions)
            warm_up_offsets(bootstrap, cluster)
            form, leave, join = rebalance_phase(bootstrap, profile, partitions)
            say(f"{profile.name}: rebalance form {form:.2f} s, leave {leave:.2f} s, "
                f"join {join:.2f} s")
            sync_rate, latencies, async_rate = commit_phase(bootstrap, profile, commit_seconds,
                                                            in_flight)
            say(f"{profile.name}: commits/s sync {sync_rate:.0f}, async {async_rate:.0f}")
            commit_s, fenced_s, led_s, loaded_s, errors = failover_phase(cluster, bootstrap,
                                                                         profile)
            say(f"{profile.name}: failover commit {commit_s:.2f} s, fenced {fenced_s:.2f} s, "
                f"new leader {led_s:.2f} s, loaded {loaded_s:.2f} s, errors {errors}")
        done = True
    finally:
        if done:
            shutil.rmtree(base, ignore_errors=True)
        else:
            say(f"the cluster's data and logs are kept in {base}")
    return GroupRun(profile=profile.name, form_s=form, leave_s=leave, join_s=join,
                    sync_commits_per_s=sync_rate,
                    sync_commit_p50_ms=1000 * percentile(latencies, 0.5),
                    sync_commit_p99_ms=1000 * percentile(latencies, 0.99),
                    async_commits_per_s=async_rate, in_flight=in_flight,
                    failover_commit_s=commit_s, fenced_s=fenced_s, offsets_leader_s=led_s,
                    coordinator_loaded_s=loaded_s, failover_errors=errors)


def _properties(pairs: Sequence[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--property takes KEY=VALUE, not {pair!r}")
        found[key] = value
    return found


def _load_average() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profiles", default="kafka,test",
                        help=f"comma-separated, of {', '.join(PROFILES)}")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--commit-seconds", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node (after the profile's)")
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    names = [n for n in args.profiles.split(",") if n]
    unknown = [n for n in names if n not in PROFILES]
    if unknown or not names:
        raise SystemExit(f"--profiles takes names of {', '.join(PROFILES)}, not {unknown}")
    if args.partitions < _MEMBERS:
        raise SystemExit(f"--partitions must be at least {_MEMBERS}: each member gets one")
    base_dir = Path(args.dir) if args.dir else None
    properties = _properties(args.property)
    lines: list[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    command = f"$ python -m bench.bench_groups {shlex.join(sys.argv[1:] if argv is None else argv)}"
    loads = [_load_average()]
    runs = []
    for i in range(args.runs):
        for name in names:
            runs.append(one_run(PROFILES[name], partitions=args.partitions,
                                commit_seconds=args.commit_seconds, in_flight=args.in_flight,
                                base_dir=base_dir, properties=properties, say=say))
        loads.append(_load_average())
        say(f"run {i + 1}/{args.runs} done")
    out(f"{command}  ({date.today()})\n")
    out(f"3 controllers + 3 brokers on loopback; topic of {args.partitions} partitions, RF 3; "
        f"confluent-kafka consumers (librdkafka, range/roundrobin assignors); {args.runs} "
        f"run(s) per profile, median [min-max].\n\nLoad before and after each run "
        f"(uptime):\n")
    for load in loads:
        out(f"    {load}")
    out("")
    for line in figure_rows(runs, {n: PROFILES[n].label for n in names}):
        out(line)
    errors: Counter[str] = Counter()
    for run in runs:
        errors.update(run.failover_errors)
    out(f"\nErrors the committer saw between the kill and its first commit (all runs): "
        f"{dict(errors) or 'none'}")
    out("\n" + json.dumps({"bench": "bench_groups",
                           "runs": [cattrs.unstructure(r) for r in runs]}))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
