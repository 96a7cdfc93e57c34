"""Seeded runs of the metadata quorum on the production machines.

``random_metadata``: three controllers and three brokers under kills,
pauses, a cut link, resignations and controlled shutdowns, while an admin
client creates topics (now and then one of several thousand partitions: a
metadata transaction) and deletes them, and, in between, sends every other
request kind (``AdminClient.chatter``) while the brokers send AlterPartition
and AllocateProducerIds; the seed also picks the controller's settings.
Then everything heals and the run must converge.

``bulk_100k``: the scale scenario. One CreateTopics of 100,000 partitions;
the active controller is killed while the transaction is half written (the
next one aborts it; the admin client's retry creates the topic once); a
broker that is in every ISR goes silent and is fenced (a transaction of a
hundred thousand partition changes); a standby takes over once more. Every
epoch change must follow a kill: load alone never moves the leadership.

Both end with ``converge``: every node restarted and healed, one active
controller, every broker unfenced, every admin request answered, and every
node's published image equal at the same offset, and every partition with
an active broker in its ISR led.
"""

from __future__ import annotations

import random
from typing import Any, Final

import attrs

from quorum.controller.cluster_control import fence_key
from quorum.controller.digest import image_digest
from quorum.controller.image import NO_LEADER
from quorum.controller.operations import RECORDS_PER_SLICE
from quorum.controller.partition_jobs import PART_UNITS
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.node.controller_machine import ControllerMachine

from ..committed import InvariantViolation
from .world import MetadataSimulation, metadata_world

__all__ = [
    "LIFECYCLE_BOUND_SLICES",
    "LifecycleRun",
    "bulk_100k",
    "converge",
    "lifecycle_100k",
    "random_knobs",
    "random_metadata",
    "settle_start",
]

START_BOUND_MS = 20_000
CONVERGE_BOUND_MS = 120_000
# an election after a kill: the fetch timeout, a pre-vote, a vote
ELECTION_WINDOW_MS = 6_000


def settle_start(sim: MetadataSimulation) -> None:
    """Start everything and wait until every broker is registered and unfenced."""
    sim.start_all()
    sim.start_clients()
    if not sim.run_until(lambda: _brokers_unfenced(sim), START_BOUND_MS):
        raise InvariantViolation("the brokers were not all unfenced after the start")


def _brokers_unfenced(sim: MetadataSimulation) -> bool:
    active = sim.active_controller()
    if active is None or active.published is None:
        return False
    image = active.published
    return all(
        (b := image.broker(n)) is not None and b.is_active for n in sim.world.observers
    )


def _led(sim: MetadataSimulation) -> str | None:
    """A partition with an active broker in its ISR but no leader (None: there is none)."""
    active = sim.active_controller()
    image = None if active is None else active.published
    if image is None:
        return "no active controller"
    for topic, index, p in image.iter_partitions():
        in_isr = [r for r in p.isr if (b := image.broker(r)) is not None and b.is_active]
        if in_isr and p.leader == NO_LEADER:
            return f"{topic.name}-{index} has active ISR members {in_isr} but no leader: {p}"
    return None


def _converged(sim: MetadataSimulation) -> bool:
    if not _brokers_unfenced(sim) or sim.admin.in_flight:
        return False
    images = [n.published for n in sim.live_nodes()]  # type: ignore[attr-defined]
    offsets = {i.provenance.offset for i in images if i is not None}
    return len(offsets) == 1 and None not in images


def converge(sim: MetadataSimulation) -> None:
    """Heal everything; within the bound every node must hold the same image."""
    sim.admin.chatting = False
    for client in sim.brokers.values():
        client.chatty = False
    sim.network.heal()
    for node_id, node in sorted(sim.nodes.items()):
        if not node.alive:
            if node_id in sim.brokers:
                sim.restart_broker(node_id)
            else:
                sim.start(node_id)
    for client in sim.brokers.values():
        if not client.running:
            client.start()
    if not sim.run_until(lambda: _converged(sim) and _led(sim) is None, CONVERGE_BOUND_MS):
        raise InvariantViolation(
            f"the cluster did not converge after healing ({_led(sim) or 'images differ'})"
        )
    digests = {image_digest(n.published) for n in sim.live_nodes()}  # type: ignore[attr-defined]
    if len(digests) != 1:
        raise InvariantViolation(f"every node at one offset, but {len(digests)} images")
    active = sim.active_controller()
    assert active is not None and active.published is not None
    image = active.published
    for name in sim.checks.created:
        if name not in sim.admin.deleted and image.topic(name) is None:
            raise InvariantViolation(f"{name} was answered as created but is gone")


def random_knobs(rng: random.Random) -> dict[str, object]:
    """The controller settings a seed picks (``ControllerConfig`` fields)."""
    return {
        "num_partitions": rng.choice((1, 2, 3)),
        "default_replication_factor": rng.choice((1, 2, 3)),
        "unclean_leader_election_enable": rng.random() < 0.3,
        "auto_leader_rebalance_enable": rng.random() < 0.7,
        "leader_imbalance_check_interval_ms": rng.choice((5_000, 30_000)),
        "unclean_leader_election_check_interval_ms": rng.choice((5_000, 30_000)),
    }


def random_metadata(seed: int) -> MetadataSimulation:
    rng = random.Random(f"metadata/{seed}")
    config_rng = random.Random(f"metadata/{seed}/config")
    knobs = random_knobs(config_rng)
    sim = MetadataSimulation(f"metadata/{seed}", metadata_world(rng), knobs=knobs,
                             snapshot_bytes=config_rng.choice((32 << 10, 128 << 10, 1 << 20)))
    settle_start(sim)
    for client in sim.brokers.values():
        client.chatty = True
    sim.admin.chatter()
    topics: list[str] = []
    for round_ in range(14):
        action = rng.choices(
            ("create", "big", "big-kill", "delete", "kill-leader", "kill-voter",
             "kill-broker", "pause", "cut", "resign", "shutdown-broker"),
            (8, 2, 2, 3, 2, 1, 2, 1, 1, 1, 2),
        )[0]
        _act(sim, rng, action, topics, round_)
        sim.run_for(rng.randint(200, 3_000))
    converge(sim)
    return sim


def _act(sim: MetadataSimulation, rng: random.Random, action: str, topics: list[str],
         round_: int) -> None:
    leader = sim.leader()
    if action == "create":
        name = f"t{round_}"
        topics.append(name)
        sim.admin.create(name, rng.randint(1, 20))
    elif action == "big":
        name = f"big{round_}"
        topics.append(name)
        sim.admin.create(name, rng.randint(1_200, 3_000))
    elif action == "big-kill" and leader is not None:
        # the active controller dies while it writes a transaction, or just after
        name = f"big{round_}"
        topics.append(name)
        sim.admin.create(name, rng.randint(2_000, 4_000))
        victim = leader.node_id
        sim.queue.after(rng.randint(2, 40), f"kill {victim} mid-creation",
                        lambda: _kill_for(sim, victim, rng.randint(500, 3_000)))
    elif action == "delete" and topics:
        sim.admin.delete(topics.pop(rng.randrange(len(topics))))
    elif action == "kill-leader" and leader is not None:
        _kill_for(sim, leader.node_id, rng.randint(500, 5_000))
    elif action == "kill-voter":
        _kill_for(sim, rng.choice(sim.voters), rng.randint(500, 5_000))
    elif action == "kill-broker":
        broker = rng.choice(sorted(sim.brokers))
        if sim.nodes[broker].alive:
            sim.kill_broker(broker)
            sim.queue.after(rng.randint(1_000, 12_000), f"restart broker {broker}",
                            lambda: sim.restart_broker(broker))
    elif action == "pause":
        sim.pause(rng.choice(sim.voters), rng.randint(100, 3_000))
    elif action == "cut" and leader is not None:
        other = rng.choice([v for v in sim.voters if v != leader.node_id])
        sim.network.cut(leader.node_id, other)
        sim.queue.after(rng.randint(500, 4_000), "heal", sim.network.heal)
    elif action == "resign" and leader is not None:
        sim.resign(leader.node_id)
    elif action == "shutdown-broker":
        sim.brokers[rng.choice(sorted(sim.brokers))].shut_down()


def _kill_for(sim: MetadataSimulation, node_id: int, down_ms: int) -> None:
    if not sim.nodes[node_id].alive:
        return
    sim.kill(node_id)
    sim.queue.after(down_ms, f"restart {node_id}", lambda: _start_if_down(sim, node_id))


def _start_if_down(sim: MetadataSimulation, node_id: int) -> None:
    if not sim.nodes[node_id].alive:  # (the healing may have started it already)
        sim.start(node_id)


# -- the scale scenario ----------------------------------------------------------------------


class EpochWatch:
    """The epochs the leaders announced, and when: each change must follow a kill."""

    def __init__(self, sim: MetadataSimulation) -> None:
        self.sim = sim
        self.kills: list[int] = []
        self.seen: dict[int, int] = {}  # epoch -> when first seen

    def look(self) -> None:
        leader = self.sim.leader()
        if leader is not None and leader.epoch not in self.seen:
            self.seen[leader.epoch] = self.sim.now_ms

    def kill(self, node_id: int) -> None:
        self.kills.append(self.sim.now_ms)
        self.sim.kill(node_id)

    def unexplained(self) -> list[tuple[int, int]]:
        first = min(self.seen) if self.seen else 0
        return [
            (epoch, at) for epoch, at in sorted(self.seen.items())
            if epoch != first and not any(0 <= at - k <= ELECTION_WINDOW_MS for k in self.kills)
        ]


def bulk_100k(seed: int, partitions: int = 100_000) -> MetadataSimulation:
    rng = random.Random(f"bulk/{seed}")
    sim = MetadataSimulation(
        f"bulk/{seed}", metadata_world(rng, lossy=False), snapshot_bytes=64 << 20,
        reference=False,  # a fold after every batch of a 100,000-partition transaction
        snapshot_by_records=False,
    )
    watch = _watch_epochs(sim)
    settle_start(sim)

    # the creation, and a kill of the active controller half-way through its transaction
    leader = sim.leader()
    assert leader is not None
    start = leader.log.log_end_offset
    sim.admin.create("big", partitions)
    if not sim.run_until(lambda: leader.log.log_end_offset >= start + partitions // 2, 60_000):
        raise InvariantViolation("the creation did not get half-way")
    watch.kill(leader.node_id)
    sim.queue.after(3_000, "restart the old leader", lambda: _start_if_down(sim, leader.node_id))
    if not sim.run_until(lambda: not sim.admin.in_flight, 120_000):
        raise InvariantViolation("the creation was not answered after the failover")
    if not sim.checks.aborted:
        raise InvariantViolation("the half-written transaction was not aborted")
    if "big" not in sim.checks.created:
        raise InvariantViolation(f"the retried creation failed: {sim.admin.answers}")

    # a broker in every ISR goes silent: it is fenced and leads nothing afterwards
    victim = sorted(sim.brokers)[0]
    sim.brokers[victim].stop()

    def fenced() -> bool:
        active = sim.active_controller()
        image = None if active is None else active.published
        if image is None or (broker := image.broker(victim)) is None or not broker.fenced:
            return False
        big = image.topic("big")
        return big is not None and all(
            p.leader != victim and (p.leader != NO_LEADER or p.isr == (victim,))
            for p in big.partitions.values()
        )

    if not sim.run_until(fenced, 60_000):
        raise InvariantViolation(f"broker {victim} was not fenced")

    # a standby takes over
    leader = sim.leader()
    assert leader is not None
    watch.kill(leader.node_id)
    sim.queue.after(2_000, "restart the old leader", lambda: _start_if_down(sim, leader.node_id))
    converge(sim)
    unexplained = watch.unexplained()
    if unexplained:
        raise InvariantViolation(
            f"the leadership moved with no kill before it: {unexplained} (kills {watch.kills})"
        )
    return sim


# -- lifecycle requests while large operations run --------------------------------------------

BROKERS: Final = 4
# a part of a job in parts: its examination and its records, in slices of the operation
PART_SLICES: Final = PART_UNITS // MAX_UNITS_PER_SLICE + -(-PART_UNITS // RECORDS_PER_SLICE)
# What a broker's registration or heartbeat waits, in slices of the controller that answers
# it (every bounded step it runs: operation slices, replay of its own batches, walks of what
# they changed), while a job in parts (a fencing) runs: what is left of the running part,
# one operation per lifecycle request queued ahead of it (a registration or a heartbeat per
# broker), its own, and as many steps again for the replay and the walk of what was written
# meanwhile, until the answer's record is committed and published.
LIFECYCLE_BOUND_SLICES: Final = 3 * (PART_SLICES + 2 * BROKERS + 1)


@attrs.define
class LifecycleRun:
    """What ``lifecycle_100k`` measured, for its test to judge."""

    sim: MetadataSimulation
    creation_slices: int  # the active controller's slices while the creation ran
    retried_epochs: list[int]  # epochs answered to one incarnation's registration, sent twice


def lifecycle_100k(seed: int, partitions: int = 100_000) -> LifecycleRun:
    """Brokers register and heartbeat while a creation and a fencing of 100,000 partitions
    run: a broker's new incarnation registers (twice: a retry of the same incarnation)
    during the creation, another during the fencing, then asks to be unfenced. Then the
    active controller dies while a part of the fencing is being written (a transaction
    open): the next one aborts it and fences the silent broker itself. Every epoch change
    must follow a kill: load alone never moves the leadership."""
    rng = random.Random(f"lifecycle/{seed}")
    sim = MetadataSimulation(
        f"lifecycle/{seed}", metadata_world(rng, brokers=BROKERS, lossy=False),
        snapshot_bytes=64 << 20, snapshot_by_records=False,
    )
    watch = _watch_epochs(sim)
    settle_start(sim)
    late = sorted(sim.brokers)[-1]
    sim.kill_broker(late)
    if not sim.run_until(lambda: _fenced(sim, late), 60_000):
        raise InvariantViolation(f"broker {late} was not fenced")

    # the creation: one transaction of about a hundred slices, a registration during it
    leader = sim.leader()
    assert leader is not None
    node = sim.nodes[leader.node_id]
    machine = node.controller
    assert machine is not None
    start = leader.log.log_end_offset
    sim.admin.create("big", partitions)
    if not sim.run_until(lambda: _running(machine) == "CreateTopics", 60_000):
        raise InvariantViolation("the creation did not start")
    begun = node.slices
    if not sim.run_until(lambda: leader.log.log_end_offset >= start + partitions // 4, 60_000):
        raise InvariantViolation("the creation did not get a quarter of the way")
    epochs: list[int] = []
    _restart_registering_twice(sim, late, epochs)
    if not sim.run_until(lambda: _running(machine) != "CreateTopics", 60_000):
        raise InvariantViolation("the creation did not end")
    creation_slices = node.slices - begun
    if not sim.run_until(lambda: not sim.admin.in_flight and _unfenced(sim, late), 60_000):
        raise InvariantViolation(f"the creation or broker {late}'s return did not complete")

    # a fencing of 100,000 partitions: the late broker leaves again and returns during it
    silent = sorted(sim.brokers)[0]
    sim.kill_broker(late)
    if not sim.run_until(lambda: _fenced(sim, late), 60_000):
        raise InvariantViolation(f"broker {late} was not fenced again")
    sim.brokers[silent].stop()
    if not sim.run_until(lambda: _fencing(sim, silent), 60_000):
        raise InvariantViolation(f"the fencing of broker {silent} did not start")
    _restart_registering_twice(sim, late, epochs)
    if not sim.run_until(lambda: _unfenced(sim, late) or not _fencing(sim, silent), 120_000):
        raise InvariantViolation(f"broker {late} did not come back")

    # the active controller dies inside a part of the fencing: its successor aborts the
    # open transaction and, once the silent broker's new session ran out, fences it again
    if _fencing(sim, silent) and sim.run_until(
        lambda: _writing_a_part(machine) or not _fencing(sim, silent), 60_000
    ) and _writing_a_part(machine):
        watch.kill(leader.node_id)
        sim.queue.after(2_000, "restart the old leader",
                        lambda: _start_if_down(sim, leader.node_id))
    if not sim.run_until(lambda: _fenced(sim, silent) and _unfenced(sim, late), 120_000):
        raise InvariantViolation(f"broker {silent} was not fenced or {late} not back")
    converge(sim)  # (starts the silent broker's client again)
    unexplained = watch.unexplained()
    if unexplained:
        raise InvariantViolation(
            f"the leadership moved with no kill before it: {unexplained} (kills {watch.kills})"
        )
    return LifecycleRun(sim, creation_slices, epochs)


def _watch_epochs(sim: MetadataSimulation) -> EpochWatch:
    """An ``EpochWatch`` that looks after every event of ``sim``."""
    watch = EpochWatch(sim)
    original_step = sim.step

    def step() -> bool:
        stepped = original_step()
        watch.look()
        return stepped

    sim.step = step  # type: ignore[method-assign]
    return watch


def _writing_a_part(machine: ControllerMachine) -> bool:
    """The fencing's part under way began a transaction that is already committed (its
    BeginTransactionRecord replayed by the leader itself), and not yet ended."""
    operation = machine.running_operation
    return (operation is not None and operation.name == "FenceBroker"
            and operation.in_transaction and machine.follower.transaction_start is not None)


def _running(machine: ControllerMachine) -> str | None:
    operation = machine.running_operation
    return None if operation is None else operation.name


def _fencing(sim: MetadataSimulation, broker_id: int) -> bool:
    active = sim.active_controller()
    return active is not None and active.controller is not None and (
        active.controller.controller.running(fence_key(broker_id))
    )


def _fenced(sim: MetadataSimulation, broker_id: int) -> bool:
    active = sim.active_controller()
    image = None if active is None else active.published
    broker = None if image is None else image.broker(broker_id)
    return broker is not None and broker.fenced


def _unfenced(sim: MetadataSimulation, broker_id: int) -> bool:
    active = sim.active_controller()
    image = None if active is None else active.published
    broker = None if image is None else image.broker(broker_id)
    return broker is not None and broker.is_active


def _restart_registering_twice(sim: MetadataSimulation, broker_id: int, epochs: list[int]) -> None:
    """A new incarnation of ``broker_id``, whose registration is sent again at once, as a
    client that gave up waiting would (the same request: the same incarnation)."""
    sim.restart_broker(broker_id)
    request = sim.brokers[broker_id].broker.registration()

    def retried(response: Any) -> None:
        if response is not None and response.error_code == 0:
            epochs.append(response.broker_epoch)

    sim.queue.after(1, f"broker {broker_id} registers again",
                    lambda: sim.call(broker_id, request, 3, retried))
