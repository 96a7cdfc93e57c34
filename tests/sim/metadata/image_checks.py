"""Image invariants of the metadata simulation, and the watches kept across answers.

On every published image: topics are whole (TopicRecord and partitions
0..n-1); per partition the leader is -1 or in the ISR, the ISR is a
non-empty subset of the replicas; every leader is a registered, unfenced
broker (one in controlled shutdown may still lead: its job moves its
partitions in parts after its mark, as Kafka's order is). Between a node's consecutive images:
leader and partition epochs never decrease. Across answers: a topic
acknowledged as created stays until someone asked to delete it; no two
producer id blocks overlap.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

import attrs

from quorum.controller.digest import image_digest
from quorum.controller.image import NO_LEADER, LeaderRecoveryState, MetadataImage

from ..committed import InvariantViolation

__all__ = [
    "DigestCache",
    "ProducerBlocks",
    "TopicWatches",
    "check_epochs_never_decrease",
    "check_image",
    "require",
]


def require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


class DigestCache:
    """``image_digest`` once per image object (images are immutable)."""

    def __init__(self) -> None:
        self._digests: dict[int, tuple[MetadataImage, str]] = {}

    def __call__(self, image: MetadataImage) -> str:
        found = self._digests.get(id(image))
        if found is None or found[0] is not image:
            found = (image, image_digest(image))
            self._digests[id(image)] = found
        return found[1]


def _check_topics(image: MetadataImage, where: str) -> None:
    require(
        len(image.topic_ids_by_name) == len(image.topics_by_id),
        f"{where}: topic name and id maps disagree",
    )
    for name, topic_id in image.topic_ids_by_name.items():
        topic = image.topics_by_id.get(topic_id)
        require(topic is not None and topic.name == name, f"{where}: {name} has no TopicImage")
        assert topic is not None
        indexes = sorted(topic.partitions)
        require(
            bool(indexes) and indexes == list(range(len(indexes))),
            f"{where}: topic {name} is half-created: partitions {indexes}",
        )


def check_image(image: MetadataImage, where: str) -> None:
    """The per-image invariants (see the module docstring)."""
    _check_topics(image, where)
    for topic, index, p in image.iter_partitions():
        at = f"{where}: {topic.name}-{index} {p}"
        require(bool(p.isr), f"{at}: empty ISR")
        require(len(set(p.isr)) == len(p.isr), f"{at}: the ISR repeats a broker")
        require(set(p.isr) <= set(p.replicas), f"{at}: the ISR is not a subset of the replicas")
        require(p.leader == NO_LEADER or p.leader in p.isr, f"{at}: the leader is not in the ISR")
        adding, removing = set(p.adding_replicas), set(p.removing_replicas)
        require((adding | removing) <= set(p.replicas) and not adding & removing,
                f"{at}: adding and removing replicas must be distinct replicas")
        if p.leader_recovery_state == LeaderRecoveryState.RECOVERING:
            require(len(p.isr) == 1, f"{at}: RECOVERING with more than one ISR member")
        if p.leader != NO_LEADER:
            # a shutting-down broker leads until its controlled shutdown's job moves its
            # partitions (in parts, after its mark); a fenced one never
            broker = image.broker(p.leader)
            require(
                broker is not None and not broker.fenced,
                f"{at}: led by broker {p.leader}, which is "
                f"{'unregistered' if broker is None else 'fenced'}",
            )


def check_epochs_never_decrease(
    before: MetadataImage, after: MetadataImage, where: str
) -> None:
    for topic_id, topic in after.topics_by_id.items():
        old = before.topics_by_id.get(topic_id)
        if old is None:
            continue
        for index, p in topic.partitions.items():
            q = old.partitions.get(index)
            if q is None:
                continue
            at = f"{where}: {topic.name}-{index}"
            require(
                p.leader_epoch >= q.leader_epoch,
                f"{at}: leader epoch went from {q.leader_epoch} to {p.leader_epoch}",
            )
            require(
                p.partition_epoch >= q.partition_epoch,
                f"{at}: partition epoch went from {q.partition_epoch} to {p.partition_epoch}",
            )


@attrs.define
class _Watch:
    name: str
    topic_id: uuid.UUID
    asked_ms: int  # when the request that created it reached the controller
    next_index: int  # the next reference image (by index) to look at


class TopicWatches:
    """Topics answered as created: in every later committed image until a delete was asked.

    A DeleteTopics naming the topic counts if it reached a controller no earlier
    than the request that created it, answered or not (a controller handles
    requests in the order they arrive, so an earlier one ran before the creation).
    """

    def __init__(self) -> None:
        self._watches: list[_Watch] = []
        self._deletes: dict[str, list[int]] = {}

    def add(self, name: str, topic_id: uuid.UUID, asked_ms: int, image_index: int) -> None:
        self._watches.append(_Watch(name, topic_id, asked_ms, image_index))

    def delete_requested(self, names: Iterable[str], at_ms: int) -> None:
        for name in names:
            self._deletes.setdefault(name, []).append(at_ms)

    def _deletable(self, watch: _Watch) -> bool:
        return any(at >= watch.asked_ms for at in self._deletes.get(watch.name, ()))

    def check(self, images: Sequence[MetadataImage]) -> None:
        """Walk every committed image not yet seen by each watch."""
        still = []
        for watch in self._watches:
            gone = False
            while watch.next_index < len(images) and not gone:
                image = images[watch.next_index]
                gone = image.topic_ids_by_name.get(watch.name) != watch.topic_id
                require(
                    not gone or self._deletable(watch),
                    f"topic {watch.name} ({watch.topic_id}) was answered as created but is "
                    f"missing at offset {image.provenance.offset}, and no one asked to delete it",
                )
                watch.next_index += 1
            if not gone:
                still.append(watch)
        self._watches = still


class ProducerBlocks:
    """Every producer id block answered to a broker; none may overlap another."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, int, int]] = []  # (start, end, broker id)

    def add(self, start: int, length: int, broker_id: int) -> None:
        end = start + length
        require(length > 0, f"an empty producer id block at {start} for broker {broker_id}")
        for other_start, other_end, other in self.blocks:
            require(
                end <= other_start or other_end <= start,
                f"producer ids [{start}, {end}) for broker {broker_id} overlap "
                f"[{other_start}, {other_end}) given to broker {other}",
            )
        self.blocks.append((start, end, broker_id))
