"""Topics created on first use: Kafka's ``auto.create.topics.enable`` (true by default).

A Metadata request that names topics the image does not have, from a client
that allows it (``allow_auto_topic_creation``, implied before v4), makes the
broker ask the active controller to create each of them with the cluster's
defaults (``num.partitions``, ``default.replication.factor``: -1 in
CreateTopics), as Kafka's ``AutoTopicCreationManager`` does. The request is
forwarded in a task of its own and the Metadata answer does not wait for it:
it says UNKNOWN_TOPIC_OR_PARTITION for now, and the client asks again (every
Kafka client retries a topic it is waiting for). A name already being created
is not asked for twice; a name the controller refuses (invalid, a race with
another creation) is logged and forgotten, so a later request tries again.
Requests for every topic never create anything.
"""

from __future__ import annotations

import logging
from typing import Final

import trio

from broker.api.forwarding import ControllerForwarder
from broker.api.metadata import all_topics_asked
from quorum.controller.image import MetadataImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import CreateTopicsRequest, CreateTopicsRequestTopic, MetadataRequest

__all__ = ["AutoTopicCreator"]

logger = logging.getLogger(__name__)

_CREATE_TOPICS_VERSION: Final = 5  # -1 partitions / replication factor: the defaults (v4+)
_TIMEOUT_MS: Final = 30_000


class AutoTopicCreator:
    def __init__(self, forwarder: ControllerForwarder, nursery: trio.Nursery) -> None:
        self._forwarder = forwarder
        self._nursery = nursery
        self._creating: set[str] = set()

    def maybe_create(self, image: MetadataImage, request: MetadataRequest, version: int) -> None:
        if all_topics_asked(request, version):
            return
        if version >= 4 and not request.allow_auto_topic_creation:
            return
        for wanted in request.topics or ():
            if wanted.name and image.topic(wanted.name) is None:
                # -1: the cluster's num.partitions and default.replication.factor
                self.create(CreateTopicsRequestTopic(
                    name=wanted.name, num_partitions=-1, replication_factor=-1
                ))

    def create(self, topic: CreateTopicsRequestTopic) -> None:
        """Ask for ``topic`` in a task of its own, unless it is being asked for already."""
        if topic.name not in self._creating:
            self._creating.add(topic.name)
            self._nursery.start_soon(self._create, topic)

    async def _create(self, topic: CreateTopicsRequestTopic) -> None:
        request = CreateTopicsRequest(topics=(topic,), timeout_ms=_TIMEOUT_MS)
        try:
            response = await self._forwarder.forward(request, _CREATE_TOPICS_VERSION)
            answer = response.topics[0] if response.topics else None
            error = None if answer is None else Errors.from_code(answer.error_code)
            if error not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                message = None if answer is None else answer.error_message
                logger.info("topic %s not created on first use: %s %s", topic.name, error,
                            message or "")
            else:
                logger.info("topic %s created on first use", topic.name)
        finally:
            self._creating.discard(topic.name)
