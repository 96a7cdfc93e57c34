"""Each hosted topic's effective config, as the broker's metadata image says it.

``TopicConfigs`` keeps one ``TopicConfig`` per topic (shared by its
partitions) while the configs it depends on last: the topic's own
ConfigRecords and the broker's dynamic configs (cluster-wide, BROKER "", and
this broker's, BROKER "<id>"). An image keeps each of those mappings as one
object while it is unchanged, so a lookup compares identities and parses
nothing. When the image changes any config (``refresh``), the topics whose
effective config changed are recomputed and returned, so the core can give
their partitions the new one at once: a produce answered after the image
holds a change is judged by it.

Whenever a topic's log config changes (or is first computed), it is handed
to the log directory (``TopicLogConfigs.configure_topic``) with the topic's
partition indexes, before any of its logs is opened: retention, rolling,
and the cleaner follow each topic's own settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Protocol

from broker.replica.config import ReplicaConfig, TopicConfig, topic_config
from quorum.controller.image import (
    EMPTY_IMAGE,
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
)
from quorum.log import LogConfig

__all__ = ["TopicConfigs", "TopicLogConfigs"]

_CLUSTER = ConfigResource(ConfigResourceType.BROKER, "")
_NONE: Mapping[str, str] = MappingProxyType({})


class TopicLogConfigs(Protocol):
    """Where partition logs take their topic's log config (the broker's LogDirectory)."""

    def configure_topic(self, topic: str, config: LogConfig, partitions: Iterable[int]) -> None:
        ...


class TopicConfigs:
    def __init__(self, defaults: ReplicaConfig, logs: TopicLogConfigs | None = None) -> None:
        self._defaults = defaults
        self._logs = logs
        self._own = ConfigResource(ConfigResourceType.BROKER, str(defaults.broker_id))
        self._image = EMPTY_IMAGE
        # (cluster-wide, this broker's) dynamic configs as the image holds them, merged
        self._sources: tuple[Mapping[str, str], Mapping[str, str]] = (_NONE, _NONE)
        self._dynamic: Mapping[str, str] = _NONE
        # topic -> (its overrides, the dynamic configs, its config), all from one image
        self._cache: dict[str, tuple[Mapping[str, str], Mapping[str, str], TopicConfig]] = {}

    def _dynamic_of(self, image: MetadataImage) -> Mapping[str, str]:
        sources = (image.configs.get(_CLUSTER, _NONE), image.configs.get(self._own, _NONE))
        if sources[0] is not self._sources[0] or sources[1] is not self._sources[1]:
            self._sources = sources
            self._dynamic = MappingProxyType({**sources[0], **sources[1]})
        return self._dynamic

    def for_topic(self, image: MetadataImage, topic: str) -> TopicConfig:
        """The topic's config in ``image`` (computed, and given to the logs, on a change)."""
        overrides = image.topic_configs(topic)
        dynamic = self._dynamic_of(image)
        cached = self._cache.get(topic)
        if cached is not None and cached[0] is overrides and cached[1] is dynamic:
            return cached[2]
        config = topic_config(overrides, self._defaults, dynamic)
        if cached is not None and cached[2] == config:
            config = cached[2]  # unchanged: keep the object the partitions share
        self._cache[topic] = (overrides, dynamic, config)
        if self._logs is not None and (cached is None or cached[2].log != config.log):
            found = image.topic(topic)
            self._logs.configure_topic(topic, config.log, () if found is None else found.partitions)
        return config

    def refresh(self, image: MetadataImage) -> list[tuple[str, Iterable[int], TopicConfig]]:
        """A new image: the known topics whose config it changed, with their partition
        indexes and new config (topics it no longer has are forgotten)."""
        old, self._image = self._image, image
        if image.configs is old.configs:
            return []
        changed: list[tuple[str, Iterable[int], TopicConfig]] = []
        for topic, (_overrides, _dynamic, before) in list(self._cache.items()):
            found = image.topic(topic)
            if found is None:
                del self._cache[topic]
                continue
            after = self.for_topic(image, topic)
            if after is not before:
                changed.append((topic, found.partitions, after))
        return changed
