"""What an answered request promised, checked against the committed log.

An answer is sent once everything its command wrote (or saw) is committed:
the committed image at that offset (``wait_until``) must be the controller's
working image right after the command, and must show what the response
says (a created topic with its partitions, an ISR change, a broker epoch, a
producer id block). A rejected single-item request wrote nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from quorum.controller.delta import NO_LEADER_CHANGE
from quorum.controller.image import NO_LEADER, MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.alter_partition import AlterPartitionRequest
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from quorum.wire.messages.configs import IncrementalAlterConfigsRequest
from quorum.wire.messages.create_partitions import CreatePartitionsRequest
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.metadata_records import PartitionChangeRecord, TopicRecord
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest
from quorum.wire.metadata_serde import MetadataRecord

from .checks import DigestCache, ProducerBlocks, TopicWatches, require
from .log import CommittedImages

__all__ = ["AnswerChecker", "Proposal"]


@attrs.frozen(kw_only=True)
class Proposal:
    """One command's result, waiting for its records (or the ones before it) to commit."""

    wait_until: int
    epoch: int
    request: Any  # None: activation or timers (no one to answer)
    version: int
    response: Any
    records: tuple[MetadataRecord, ...]
    working: MetadataImage  # the active controller's working image right after the command
    reply: Callable[[Any], None] | None = None


class AnswerChecker:
    def __init__(
        self,
        config: ControllerConfig,
        images: CommittedImages,
        digests: DigestCache,
        watches: TopicWatches,
        blocks: ProducerBlocks,
    ) -> None:
        self.config = config
        self.images = images
        self.digests = digests
        self.watches = watches
        self.blocks = blocks

    def check(self, proposal: Proposal) -> None:
        image = self.images.at(proposal.wait_until)
        what = "activation or timers" if proposal.request is None else type(proposal.request).__name__
        require(
            self.digests(image) == self.digests(proposal.working),
            f"{what}: the working image after the command differs from the committed image "
            f"at offset {proposal.wait_until}",
        )
        check = _CHECKS.get(type(proposal.request))
        if check is not None:
            check(self, proposal, image)

    # -- per request type ------------------------------------------------------------------

    def _create_topics(self, p: Proposal, image: MetadataImage) -> None:
        request: CreateTopicsRequest = p.request
        wanted = {t.name: t for t in reversed(request.topics)}
        created = {r.name: r.topic_id for r in p.records if isinstance(r, TopicRecord)}
        for answer in p.response.topics:
            if answer.error_code != Errors.NONE:
                require(answer.name not in created, f"refused topic {answer.name} was written")
                continue
            topic = image.topic(answer.name)
            require(topic is not None and topic.topic_id == created.get(answer.name),
                    f"topic {answer.name} answered as created is not in the image")
            assert topic is not None
            asked = wanted[answer.name]
            count = self.config.num_partitions if asked.num_partitions == -1 else asked.num_partitions
            factor = (self.config.default_replication_factor if asked.replication_factor == -1
                      else asked.replication_factor)
            require(len(topic.partitions) == count,
                    f"{answer.name}: {len(topic.partitions)} partitions, asked for {count}")
            require(all(len(q.replicas) == factor for q in topic.partitions.values()),
                    f"{answer.name}: replication factor is not {factor}")
            self.watches.add(
                answer.name, topic.topic_id, p.wait_until, self.images.index_of(p.wait_until)
            )

    def _delete_topics(self, p: Proposal, image: MetadataImage) -> None:
        for answer in p.response.responses:
            if answer.error_code == Errors.NONE:
                require(image.topic(answer.name) is None,
                        f"topic {answer.name} answered as deleted is still in the image")

    def _create_partitions(self, p: Proposal, image: MetadataImage) -> None:
        request: CreatePartitionsRequest = p.request
        for asked, answer in zip(request.topics, p.response.results, strict=True):
            if answer.error_code != Errors.NONE:
                require(not p.records, f"refused CreatePartitions for {asked.name} wrote records")
                continue
            topic = image.topic(asked.name)
            require(topic is not None and len(topic.partitions) == asked.count,
                    f"{asked.name}: not {asked.count} partitions after CreatePartitions")

    def _elect_leaders(self, p: Proposal, image: MetadataImage) -> None:
        """NONE means a record was written (Kafka): the wanted leader, or, when a
        pending reassignment could complete, that completion without one."""
        request: ElectLeadersRequest = p.request
        for result in p.response.replica_election_results:
            topic = image.topic(result.topic)
            for part in result.partition_result:
                if part.error_code != Errors.NONE:
                    continue
                where = f"{result.topic}-{part.partition_id}"
                require(topic is not None and part.partition_id in topic.partitions,
                        f"{where}: elected but unknown")
                assert topic is not None
                q = topic.partitions[part.partition_id]
                changes = [r for r in p.records if isinstance(r, PartitionChangeRecord)
                           and r.topic_id == topic.topic_id and r.partition_id == part.partition_id]
                require(bool(changes), f"{where}: election answered NONE without a record")
                elected = q.leader == q.preferred_leader if request.election_type == 0 else (
                    q.leader != NO_LEADER)
                require(elected or any(r.replicas is not None for r in changes),
                        f"{where}: election type {request.election_type} answered NONE, "
                        f"but {q} has not the wanted leader")

    def _alter_partition(self, p: Proposal, image: MetadataImage) -> None:
        response = p.response
        if response.error_code != Errors.NONE:
            require(not p.records, "a refused AlterPartition wrote records")
            return
        data = p.request.topics[0]
        asked = data.partitions[0]
        answer = response.topics[0].partitions[0]
        if answer.error_code != Errors.NONE:
            # the one error with a record: the ISR completed a reassignment that moved
            # leadership away from the sender (FENCED_LEADER_EPOCH before v2)
            moved = [r for r in p.records if isinstance(r, PartitionChangeRecord)
                     and r.leader not in (NO_LEADER_CHANGE, p.request.broker_id)]
            require(not p.records or (bool(moved) and answer.error_code in (
                Errors.NEW_LEADER_ELECTED, Errors.FENCED_LEADER_EPOCH)),
                f"AlterPartition refused with {answer.error_code} wrote {p.records}")
            return
        topic = image.topics_by_id.get(data.topic_id)
        require(topic is not None, "AlterPartition answered NONE for a topic not in the image")
        assert topic is not None
        q = topic.partitions[asked.partition_index]
        isr = asked.new_isr if p.version < 3 else tuple(s.broker_id for s in asked.new_isr_with_epochs)
        where = f"{topic.name}-{asked.partition_index}"
        # a reassignment the new ISR completes drops the removed replicas from it too
        require(set(q.isr) == set(isr) & set(q.replicas),
                f"{where}: ISR {q.isr} after asking for {isr}")
        require((answer.leader_id, answer.leader_epoch, answer.partition_epoch)
                == (q.leader, q.leader_epoch, q.partition_epoch),
                f"{where}: the answer {answer} does not match the image {q}")

    def _registration(self, p: Proposal, image: MetadataImage) -> None:
        request: BrokerRegistrationRequest = p.request
        if p.response.error_code != Errors.NONE:
            require(not p.records, f"a refused registration of {request.broker_id} wrote records")
            return
        broker = image.broker(request.broker_id)
        require(broker is not None and broker.epoch == p.response.broker_epoch
                and broker.incarnation_id == request.incarnation_id,
                f"broker {request.broker_id} registered with epoch {p.response.broker_epoch} "
                f"but the image has {broker}")

    def _heartbeat(self, p: Proposal, image: MetadataImage) -> None:
        request: BrokerHeartbeatRequest = p.request
        response = p.response
        if response.error_code != Errors.NONE:
            require(not p.records, f"a refused heartbeat of {request.broker_id} wrote records")
            return
        broker = image.broker(request.broker_id)
        require(broker is not None and broker.epoch == request.broker_epoch,
                f"heartbeat of broker {request.broker_id} accepted for a stale epoch")
        assert broker is not None
        require(response.is_fenced == broker.fenced,
                f"broker {request.broker_id}: answered is_fenced={response.is_fenced}, "
                f"image says fenced={broker.fenced}")
        require(not response.should_shut_down or broker.fenced,
                f"broker {request.broker_id} told to shut down while unfenced")

    def _producer_ids(self, p: Proposal, image: MetadataImage) -> None:
        request: AllocateProducerIdsRequest = p.request
        response = p.response
        if response.error_code != Errors.NONE:
            require(not p.records, "a refused AllocateProducerIds wrote records")
            return
        end = response.producer_id_start + response.producer_id_len
        require(image.next_producer_id == end,
                f"producer ids up to {end} handed out, the image's next id is "
                f"{image.next_producer_id}")
        self.blocks.add(response.producer_id_start, response.producer_id_len, request.broker_id)

    def _unregister(self, p: Proposal, image: MetadataImage) -> None:
        request: UnregisterBrokerRequest = p.request
        if p.response.error_code == Errors.NONE:
            require(image.broker(request.broker_id) is None,
                    f"broker {request.broker_id} answered as unregistered is in the image")
        else:
            require(not p.records, "a refused UnregisterBroker wrote records")

    def _reassignments(self, p: Proposal, image: MetadataImage) -> None:
        request: AlterPartitionReassignmentsRequest = p.request
        asked = request.topics[0].partitions[0]
        name = request.topics[0].name
        answer = p.response.responses[0].partitions[0] if p.response.responses else None
        if p.response.error_code != Errors.NONE or answer is None or answer.error_code:
            require(not p.records, f"a refused reassignment of {name} wrote records")
            return
        topic = image.topic(name)
        require(topic is not None, f"{name} reassigned but not in the image")
        assert topic is not None
        q = topic.partitions[asked.partition_index]
        where = f"{name}-{asked.partition_index}"
        if asked.replicas is None:
            require(not q.is_reassigning, f"{where}: still reassigning after a cancel: {q}")
            return
        target = tuple(asked.replicas)
        require(q.replicas[:len(target)] == target and set(q.adding_replicas) <= set(target),
                f"{where}: replicas {q} after a reassignment to {target}")
        require(set(q.replicas) - set(target) == set(q.removing_replicas),
                f"{where}: the replicas beyond the target {target} are not removing: {q}")

    def _alter_configs(self, p: Proposal, image: MetadataImage) -> None:
        request: IncrementalAlterConfigsRequest = p.request
        resource = request.resources[0]
        config = resource.configs[0]
        if p.response.responses[0].error_code != Errors.NONE:
            require(not p.records, f"a refused config change of {resource.resource_name} wrote")
            return
        found = image.topic_configs(resource.resource_name).get(config.name)
        expected = None if config.config_operation == 1 else config.value
        require(found == expected or (expected is None and config.name == "min.insync.replicas"),
                f"{resource.resource_name}: {config.name} is {found}, set to {expected}")

    def _list_reassignments(self, p: Proposal, image: MetadataImage) -> None:
        """A read: the listing is every reassigning partition of the image."""
        listed = {
            (t.name, q.partition_index, tuple(q.replicas), tuple(q.adding_replicas),
             tuple(q.removing_replicas))
            for t in p.response.topics for q in t.partitions
        }
        moving = {
            (t.name, i, q.replicas, q.adding_replicas, q.removing_replicas)
            for t, i, q in image.iter_partitions() if q.is_reassigning
        }
        require(not p.records and listed == moving,
                f"ListPartitionReassignments answered {sorted(listed)}, image has {sorted(moving)}")


_CHECKS: Final[dict[type, Callable[[AnswerChecker, Proposal, MetadataImage], None]]] = {
    CreateTopicsRequest: AnswerChecker._create_topics,
    DeleteTopicsRequest: AnswerChecker._delete_topics,
    CreatePartitionsRequest: AnswerChecker._create_partitions,
    ElectLeadersRequest: AnswerChecker._elect_leaders,
    AlterPartitionRequest: AnswerChecker._alter_partition,
    BrokerRegistrationRequest: AnswerChecker._registration,
    BrokerHeartbeatRequest: AnswerChecker._heartbeat,
    AllocateProducerIdsRequest: AnswerChecker._producer_ids,
    UnregisterBrokerRequest: AnswerChecker._unregister,
    AlterPartitionReassignmentsRequest: AnswerChecker._reassignments,
    IncrementalAlterConfigsRequest: AnswerChecker._alter_configs,
    ListPartitionReassignmentsRequest: AnswerChecker._list_reassignments,
}
