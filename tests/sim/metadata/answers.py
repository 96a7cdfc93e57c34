"""What an answer of a production controller promised, checked against the committed log.

``ControllerMachine`` sends an answer once the image it published holds
everything the request wrote or saw. So the answer must be true of a
reference image (``ReferenceImages``) at a stable boundary between the
node's log end when the request arrived (its records, if any, come after;
for a heartbeat that changes nothing, answered at once, the image published
then) and the image the node had published when the answer left (or one inside a
batch there, ``ReferenceImages.inside``): a created topic
with its partitions and replication factor, an ISR change with the epochs
the answer gives, a broker epoch, a producer id block, a reassignment, a
config. A NOT_CONTROLLER answer promises nothing; any other refusal (every
item refused) must have written no record (``RecordingController``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Final

import attrs

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
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest
from quorum.wire.metadata_serde import MetadataRecord

from ..committed import InvariantViolation
from .image_checks import ProducerBlocks, TopicWatches
from .reference import ReferenceImages

__all__ = ["Answer", "AnswerChecker", "error_codes"]

_ITEMS: Final = ("topics", "responses", "results", "replica_election_results")


def error_codes(response: Any) -> list[int]:
    """Every error code of a response: its own, its items' and their partitions'."""
    codes = [getattr(response, "error_code", Errors.NONE)]
    for items in _ITEMS:
        for item in getattr(response, items, None) or ():
            codes.append(getattr(item, "error_code", Errors.NONE))
            for part in getattr(item, "partitions", None) or getattr(
                item, "partition_result", None
            ) or ():
                codes.append(getattr(part, "error_code", Errors.NONE))
    return codes


def _refused(codes: list[int]) -> bool:
    """Whether a response (``error_codes``) refused everything it was asked: its own code,
    or every item's and partition's."""
    return codes[0] != Errors.NONE or (
        len(codes) > 1 and all(code != Errors.NONE for code in codes[1:])
    )


@attrs.frozen(kw_only=True)
class Answer:
    node_id: int
    request: Any
    version: int
    response: Any
    arrived_end: int  # the node's log end offset when the request arrived
    arrived_published: int  # the offset of the node's published image then
    arrived_ms: int
    published_offset: int  # of the node's published image when the answer left
    # the records the request's operation wrote (markers left out; None: not recorded)
    written: tuple[MetadataRecord, ...] | None = None


class AnswerChecker:
    def __init__(
        self,
        config: ControllerConfig,
        reference: ReferenceImages,
        watches: TopicWatches,
        blocks: ProducerBlocks,
    ) -> None:
        self.config = config
        self.reference = reference
        self.watches = watches
        self.blocks = blocks
        self.checked = 0

    def check(self, answer: Answer) -> None:
        codes = error_codes(answer.response)
        if Errors.NOT_CONTROLLER in codes:
            return  # the operation may have been cut off half-way: the next leader aborts it
        if answer.written and _refused(codes):
            raise InvariantViolation(
                f"node {answer.node_id} refused {type(answer.request).__name__} "
                f"({sorted(set(codes) - {Errors.NONE})}) yet wrote {len(answer.written)} "
                f"record(s), the first {answer.written[0]}"
            )
        check = _CHECKS.get(type(answer.request))
        if check is None:
            return
        complaint = "no committed image between those offsets"
        start = answer.arrived_end
        if isinstance(answer.request, BrokerHeartbeatRequest | BrokerRegistrationRequest):
            # one that changes nothing (a heartbeat, a registration of the same incarnation
            # again) is answered at once from the published image
            start = min(start, answer.arrived_published)
        reference, end = self.reference, answer.published_offset
        for index, image in itertools.chain(
            reference.between(start, end), reference.inside(start, end)
        ):
            found = check(self, answer, image)
            if found is None:
                self.checked += 1
                self._keep(answer, index, image)
                return
            complaint = found
        raise InvariantViolation(
            f"node {answer.node_id} answered {type(answer.request).__name__} "
            f"{answer.response} with no committed image from offset {start} to "
            f"{answer.published_offset} to back it: {complaint}"
        )

    def _keep(self, answer: Answer, index: int, image: MetadataImage) -> None:
        """What later answers and images are checked against."""
        request, response = answer.request, answer.response
        if isinstance(request, CreateTopicsRequest):
            for topic in response.topics:
                if topic.error_code == Errors.NONE:
                    found = image.topic(topic.name)
                    assert found is not None
                    self.watches.add(topic.name, found.topic_id, answer.arrived_ms, index)
        elif isinstance(request, AllocateProducerIdsRequest) and not response.error_code:
            self.blocks.add(response.producer_id_start, response.producer_id_len,
                            request.broker_id)

    # -- per request type: None if ``image`` backs the answer, else why not ---------------

    def _create_topics(self, a: Answer, image: MetadataImage) -> str | None:
        request: CreateTopicsRequest = a.request
        wanted = {t.name: t for t in reversed(request.topics)}
        before = self.reference.at_or_before(a.arrived_end)
        for answer in a.response.topics:
            if answer.error_code != Errors.NONE:
                continue
            topic = image.topic(answer.name)
            if topic is None:
                return f"topic {answer.name} answered as created is not in the image"
            if topic.topic_id in before.topics_by_id:
                return f"topic {answer.name} answered as created existed before the request"
            asked = wanted[answer.name]
            count = (self.config.num_partitions if asked.num_partitions == -1
                     else asked.num_partitions)
            factor = (self.config.default_replication_factor if asked.replication_factor == -1
                      else asked.replication_factor)
            if len(topic.partitions) != count:
                return f"{answer.name}: {len(topic.partitions)} partitions, asked for {count}"
            if any(len(q.replicas) != factor for q in topic.partitions.values()):
                return f"{answer.name}: replication factor is not {factor}"
        return None

    def _delete_topics(self, a: Answer, image: MetadataImage) -> str | None:
        for answer in a.response.responses:
            if answer.error_code == Errors.NONE and image.topic(answer.name) is not None:
                return f"topic {answer.name} answered as deleted is still in the image"
        return None

    def _create_partitions(self, a: Answer, image: MetadataImage) -> str | None:
        request: CreatePartitionsRequest = a.request
        for asked, answer in zip(request.topics, a.response.results, strict=True):
            topic = image.topic(asked.name)
            if answer.error_code == Errors.NONE and (
                topic is None or len(topic.partitions) != asked.count
            ):
                return f"{asked.name}: not {asked.count} partitions after CreatePartitions"
        return None

    def _elect_leaders(self, a: Answer, image: MetadataImage) -> str | None:
        """NONE: the wanted leader, or (Kafka) a pending reassignment completed instead."""
        request: ElectLeadersRequest = a.request
        before = self.reference.at_or_before(a.arrived_end)
        for result in a.response.replica_election_results:
            topic = image.topic(result.topic)
            for part in result.partition_result:
                if part.error_code != Errors.NONE:
                    continue
                where = f"{result.topic}-{part.partition_id}"
                if topic is None or part.partition_id not in topic.partitions:
                    return f"{where}: elected but unknown"
                q = topic.partitions[part.partition_id]
                elected = q.leader == q.preferred_leader if request.election_type == 0 else (
                    q.leader != NO_LEADER)
                old = before.partition(topic.topic_id, part.partition_id)
                completed = old is not None and old.is_reassigning and not q.is_reassigning
                if not (elected or completed):
                    return (f"{where}: election type {request.election_type} answered NONE, "
                            f"but {q} has not the wanted leader")
        return None

    def _alter_partition(self, a: Answer, image: MetadataImage) -> str | None:
        response = a.response
        answer = response.topics[0].partitions[0] if response.topics else None
        if response.error_code != Errors.NONE or answer is None or answer.error_code:
            return None
        data = a.request.topics[0]
        asked = data.partitions[0]
        topic = image.topics_by_id.get(data.topic_id)
        if topic is None or asked.partition_index not in topic.partitions:
            return "AlterPartition answered NONE for a partition not in the image"
        q = topic.partitions[asked.partition_index]
        isr = (asked.new_isr if a.version < 3
               else tuple(s.broker_id for s in asked.new_isr_with_epochs))
        where = f"{topic.name}-{asked.partition_index}"
        # a reassignment the new ISR completes drops the removed replicas from it too
        if set(q.isr) != set(isr) & set(q.replicas):
            return f"{where}: ISR {q.isr} after asking for {isr}"
        if (answer.leader_id, answer.leader_epoch, answer.partition_epoch) != (
            q.leader, q.leader_epoch, q.partition_epoch
        ):
            return f"{where}: the answer {answer} does not match the image {q}"
        return None

    def _registration(self, a: Answer, image: MetadataImage) -> str | None:
        request: BrokerRegistrationRequest = a.request
        if a.response.error_code != Errors.NONE:
            return None
        broker = image.broker(request.broker_id)
        if broker is None or broker.epoch != a.response.broker_epoch or (
            broker.incarnation_id != request.incarnation_id
        ):
            return (f"broker {request.broker_id} registered with epoch "
                    f"{a.response.broker_epoch}, but the image has {broker}")
        return None

    def _heartbeat(self, a: Answer, image: MetadataImage) -> str | None:
        request: BrokerHeartbeatRequest = a.request
        response = a.response
        if response.error_code != Errors.NONE:
            return None
        broker = image.broker(request.broker_id)
        if broker is None or broker.epoch != request.broker_epoch:
            return f"heartbeat of broker {request.broker_id} accepted for a stale epoch"
        if response.is_fenced != broker.fenced:
            return (f"broker {request.broker_id}: answered is_fenced={response.is_fenced}, "
                    f"image says fenced={broker.fenced}")
        if response.should_shut_down and not broker.fenced:
            return f"broker {request.broker_id} told to shut down while unfenced"
        return None

    def _producer_ids(self, a: Answer, image: MetadataImage) -> str | None:
        response = a.response
        if response.error_code != Errors.NONE:
            return None
        end = response.producer_id_start + response.producer_id_len
        if image.next_producer_id != end:
            return (f"producer ids up to {end} handed out, the image's next id is "
                    f"{image.next_producer_id}")
        return None

    def _unregister(self, a: Answer, image: MetadataImage) -> str | None:
        request: UnregisterBrokerRequest = a.request
        if a.response.error_code == Errors.NONE and image.broker(request.broker_id) is not None:
            return f"broker {request.broker_id} answered as unregistered is in the image"
        return None

    def _reassignments(self, a: Answer, image: MetadataImage) -> str | None:
        request: AlterPartitionReassignmentsRequest = a.request
        asked = request.topics[0].partitions[0]
        name = request.topics[0].name
        response = a.response
        answer = response.responses[0].partitions[0] if response.responses else None
        if response.error_code != Errors.NONE or answer is None or answer.error_code:
            return None
        topic = image.topic(name)
        if topic is None or asked.partition_index not in topic.partitions:
            return f"{name} reassigned but not in the image"
        q = topic.partitions[asked.partition_index]
        where = f"{name}-{asked.partition_index}"
        if asked.replicas is None:
            return f"{where}: still reassigning after a cancel: {q}" if q.is_reassigning else None
        target = tuple(asked.replicas)
        if q.replicas[:len(target)] != target or not set(q.adding_replicas) <= set(target):
            return f"{where}: replicas {q} after a reassignment to {target}"
        if set(q.replicas) - set(target) != set(q.removing_replicas):
            return f"{where}: the replicas beyond the target {target} are not removing: {q}"
        return None

    def _alter_configs(self, a: Answer, image: MetadataImage) -> str | None:
        request: IncrementalAlterConfigsRequest = a.request
        resource = request.resources[0]
        config = resource.configs[0]
        if a.response.responses[0].error_code != Errors.NONE:
            return None
        found = image.topic_configs(resource.resource_name).get(config.name)
        expected = None if config.config_operation == 1 else config.value
        if found == expected or (expected is None and config.name == "min.insync.replicas"):
            return None
        return f"{resource.resource_name}: {config.name} is {found}, set to {expected}"

    def _list_reassignments(self, a: Answer, image: MetadataImage) -> str | None:
        """A read: the listing is every reassigning partition of the image."""
        listed = {
            (t.name, q.partition_index, tuple(q.replicas), tuple(q.adding_replicas),
             tuple(q.removing_replicas))
            for t in a.response.topics for q in t.partitions
        }
        moving = {
            (t.name, i, q.replicas, q.adding_replicas, q.removing_replicas)
            for t, i, q in image.iter_partitions() if q.is_reassigning
        }
        if listed != moving:
            return f"ListPartitionReassignments answered {sorted(listed)}, image has {sorted(moving)}"
        return None


_CHECKS: Final[dict[type, Callable[[AnswerChecker, Answer, MetadataImage], str | None]]] = {
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
