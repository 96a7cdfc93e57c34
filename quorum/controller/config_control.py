"""IncrementalAlterConfigs and DescribeConfigs for TOPIC (2) and BROKER (4).

DescribeConfigs answers every config pykraft knows for a topic (or the named
ones; unknown names are left out, as in Kafka) with its effective value and
source (TOPIC_CONFIG 1, DYNAMIC_DEFAULT_BROKER_CONFIG 3, STATIC_BROKER_CONFIG
4, DEFAULT_CONFIG 5; see topic_configs), and for a broker id the dynamic
broker configs (DYNAMIC_BROKER_CONFIG 2 first). Synonyms (v1+, on request)
list the whole resolution chain, most specific first.

IncrementalAlterConfigs (Kafka's ConfigurationControlManager plus the
broker-side preprocessing of ConfigAdminManager), per resource:
- a resource named twice in one request: INVALID_REQUEST for every copy;
- a config key named twice, an unknown operation, or a null value for any
  operation but DELETE: INVALID_REQUEST;
- a resource type other than TOPIC or BROKER: INVALID_REQUEST;
- BROKER: the name is "" (cluster-wide default) or a broker id; an id that is
  no registered broker and not this controller: BROKER_ID_NOT_REGISTERED;
- ops SET 0, DELETE 1, APPEND 2, SUBTRACT 3; APPEND/SUBTRACT only on LIST
  configs (INVALID_CONFIG otherwise), starting from the default when unset;
- the resulting values are validated: topics -> INVALID_CONFIG (unknown key,
  bad value, min.insync.replicas > RF: see topic_configs); brokers -> keys
  are the dynamic broker synonyms of the topic configs, a bad one answers
  INVALID_REQUEST as Kafka's broker does (KAFKA-13609);
- a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (checked after
  the values, in Kafka's order);
- ConfigRecords for values that change (for brokers always, KAFKA-14136:
  brokers reload on any record); validate_only writes nothing.

Both examine their request in slices of at most ``MAX_UNITS_PER_SLICE`` units
(``quorum.controller.operations.SliceBudget``): a unit per resource, per config
entry and pass over the entries, per config a described resource resolves. The
first of several bad keys is found by keeping the least one seen, not by
sorting them. IncrementalAlterConfigs writes its records at the end (one
transaction when they span several slices).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Mapping
from typing import Final

from quorum.controller.image import ConfigResource, ConfigResourceType, MetadataImage
from quorum.controller.operations import Slice, SliceBudget, Steps, at_once
from quorum.controller.rejections import Rejected
from quorum.controller.results import ControllerContext
from quorum.controller.topic_configs import (
    BROKER_CONFIGS,
    CLUSTER_DEFAULT,
    TOPIC_CONFIGS,
    ConfigKind,
    ConfigSource,
    ConfigValue,
    TopicConfigDef,
    check_topic_configs,
    resolve_topic_configs,
    static_broker_value,
    validate_config_value,
)
from quorum.controller.topic_names import topic_name_problem
from quorum.wire.error_codes import Errors
from quorum.wire.messages.configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseResult,
    DescribeConfigsResponseSynonym,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResource,
)
from quorum.wire.messages.metadata_records import ConfigRecord

__all__ = [
    "OPS",
    "describe_configs",
    "describe_configs_steps",
    "incremental_alter_configs",
    "incremental_alter_configs_steps",
    "resource_problem",
]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPS: Final = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# describing a resource resolves each config pykraft knows for it
_UNITS_PER_DESCRIBED_RESOURCE: Final = 1 + max(len(TOPIC_CONFIGS), len(BROKER_CONFIGS))


def resource_problem(
    image: MetadataImage, kind: int, name: str, ctx: ControllerContext
) -> Rejected | None:
    """Why a resource cannot be named at all (bad type, name or broker id)."""
    if kind == ConfigResourceType.TOPIC:
        if not name:
            return Rejected(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        problem = topic_name_problem(name)
        return None if problem is None else Rejected(Errors.INVALID_TOPIC_EXCEPTION, problem)
    if kind != ConfigResourceType.BROKER:
        return Rejected(Errors.INVALID_REQUEST, f"Unsupported resource type {kind}.")
    if not name:
        return None
    if not name.isascii() or not name.isdigit():
        return Rejected(
            Errors.INVALID_REQUEST, f"Broker name {name!r} is not a non-negative broker id."
        )
    if image.broker(int(name)) is None and int(name) != ctx.config.node_id:
        return Rejected(Errors.BROKER_ID_NOT_REGISTERED, f"No node with id {name} found.")
    return None


def _new_value(
    definition: TopicConfigDef | None, op: int, current: str | None, value: str | None
) -> str | None:
    if op == SET:
        return value
    if op == DELETE:
        return None
    if definition is None or definition.kind != ConfigKind.LIST:
        name = "this key" if definition is None else definition.name
        raise Rejected(
            Errors.INVALID_CONFIG, f"Can't {OPS[op]} to {name} because its type is not LIST."
        )
    base = definition.default if current is None else current
    parts = [p for p in base.split(",") if p]
    assert value is not None
    for item in value.split(","):
        if op == APPEND and item not in parts:
            parts.append(item)
        elif op == SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _check_shape(
    resource: IncrementalAlterConfigsRequestAlterConfigsResource, budget: SliceBudget
) -> Generator[Slice, None, None]:
    """Kafka's order: a duplicate key, then an unknown operation, then null values."""
    names: set[str] = set()
    unknown_ops: list[int] = []
    nulls: list[str] = []
    for config in resource.configs:
        yield from budget.take()
        if config.name in names:  # answered whatever else is wrong: it can stop here
            raise Rejected(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
        names.add(config.name)
        if config.config_operation not in OPS:
            unknown_ops.append(config.config_operation)
        if config.config_operation != DELETE and config.value is None:
            nulls.append(config.name)
    if unknown_ops:
        raise Rejected(Errors.INVALID_REQUEST, f"Unknown operations type {unknown_ops[0]}")
    if nulls:
        raise Rejected(Errors.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")


def _replication_factor(image: MetadataImage, topic: str) -> int | None:
    found = image.topic(topic)
    first = None if found is None else found.partitions.get(0)
    return None if first is None else len(first.replicas) - len(first.removing_replicas)


def _merge(
    image: MetadataImage,
    key: ConfigResource,
    resource: IncrementalAlterConfigsRequestAlterConfigsResource,
    budget: SliceBudget,
) -> Generator[Slice, None, tuple[list[ConfigRecord], dict[str, str]]]:
    """The resource's records and configs after the request (its keys are distinct).

    Rejected, in Kafka's order: the first entry whose operation fails; for a
    broker, the first key (sorted) that is no dynamic broker config; the first
    key (sorted) whose new value is invalid.
    """
    topic = key.type == ConfigResourceType.TOPIC
    table = TOPIC_CONFIGS if topic else BROKER_CONFIGS
    existing = image.configs.get(key, {})
    merged, records = dict(existing), []
    not_dynamic: str | None = None
    invalid: tuple[str, str] | None = None  # (key, why)
    for config in resource.configs:
        yield from budget.take()
        name, current = config.name, existing.get(config.name)
        value = _new_value(table.get(name), config.config_operation, current, config.value)
        if value != current or not topic:
            records.append(ConfigRecord(
                resource_type=key.type, resource_name=key.name, name=name, value=value
            ))
        if name not in BROKER_CONFIGS and (not_dynamic is None or name < not_dynamic):
            not_dynamic = name
        if value is None:
            merged.pop(name, None)
            continue
        merged[name] = value
        # only the keys this request sets: stored values were checked when written
        if invalid is None or name < invalid[0]:
            problem = validate_config_value(table, name, value)
            invalid = invalid if problem is None else (name, problem)
    if not topic and not_dynamic is not None:
        raise Rejected(
            Errors.INVALID_REQUEST,
            f"Cannot update {not_dynamic} dynamically (dynamic broker configs: "
            f"{', '.join(sorted(BROKER_CONFIGS))})",
        )
    if invalid is not None:
        # Kafka's broker answers bad dynamic broker configs with INVALID_REQUEST
        raise Rejected(Errors.INVALID_CONFIG if topic else Errors.INVALID_REQUEST, invalid[1])
    return records, merged


def _check_topic(image: MetadataImage, topic: str, merged: Mapping[str, str]) -> None:
    factor = _replication_factor(image, topic)
    problem = check_topic_configs(merged, factor)
    if problem is not None:
        raise Rejected(Errors.INVALID_CONFIG, problem)
    if image.topic(topic) is None:
        raise Rejected(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")


def _altered(
    image: MetadataImage,
    resource: IncrementalAlterConfigsRequestAlterConfigsResource,
    ctx: ControllerContext,
    budget: SliceBudget,
) -> Generator[Slice, None, list[ConfigRecord]]:
    """One resource's records (Rejected: why none), an entry per unit and pass."""
    rejected = resource_problem(image, resource.resource_type, resource.resource_name, ctx)
    if rejected is not None:
        raise rejected
    yield from _check_shape(resource, budget)
    key = ConfigResource(ConfigResourceType(resource.resource_type), resource.resource_name)
    records, merged = yield from _merge(image, key, resource, budget)
    if key.type == ConfigResourceType.TOPIC:
        _check_topic(image, key.name, merged)
    return records


def incremental_alter_configs_steps(
    image: MetadataImage,
    request: IncrementalAlterConfigsRequest,
    version: int,
    ctx: ControllerContext,
) -> Steps[IncrementalAlterConfigsResponse]:
    """Count the resources, then examine each (a unit per resource, per entry and pass,
    paused as the budget runs out); then write the ConfigRecords (a transaction when they
    span several slices)."""
    budget = SliceBudget()
    counts: Counter[tuple[int, str]] = Counter()
    for resource in request.resources:
        yield from budget.take()
        counts[(resource.resource_type, resource.resource_name)] += 1
    records: list[ConfigRecord] = []
    answers = []
    for resource in request.resources:
        yield from budget.take()
        error, message = Errors.NONE, None
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise Rejected(Errors.INVALID_REQUEST, "Each resource must appear at most once.")
            altered = yield from _altered(image, resource, ctx, budget)
            records += altered
        except Rejected as rejected:
            error, message = rejected.error, rejected.message
        answers.append(IncrementalAlterConfigsResponseAlterConfigsResource(
            error_code=error,
            error_message=message,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        ))
    yield from budget.emit(() if request.validate_only else records)
    return IncrementalAlterConfigsResponse(responses=tuple(answers))


incremental_alter_configs = at_once("IncrementalAlterConfigs", incremental_alter_configs_steps)


# -- DescribeConfigs ------------------------------------------------------------------------


def _broker_values(
    image: MetadataImage, name: str, ctx: ControllerContext
) -> list[ConfigValue]:
    """Dynamic broker configs: per broker (2), cluster-wide (3), static (4), default (5).

    The "" resource lists only what is set cluster-wide, as Kafka's broker does.
    """
    own = image.configs.get(ConfigResource(ConfigResourceType.BROKER, name), {}) if name else {}
    cluster = image.configs.get(CLUSTER_DEFAULT, {})
    values = []
    for key in sorted(BROKER_CONFIGS):
        definition = BROKER_CONFIGS[key]
        chain: list[tuple[ConfigSource, str, str]] = []
        if key in own:
            chain.append((ConfigSource.DYNAMIC_BROKER_CONFIG, key, own[key]))
        if key in cluster:
            chain.append((ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, key, cluster[key]))
        if name:
            static = static_broker_value(key, ctx.config)
            if static is not None and static != definition.default:
                chain.append((ConfigSource.STATIC_BROKER_CONFIG, key, static))
            chain.append((ConfigSource.DEFAULT_CONFIG, key, definition.default))
        if chain:
            values.append(ConfigValue(
                name=key, value=chain[0][2], source=chain[0][0], kind=definition.kind,
                doc=definition.doc, synonyms=tuple(chain),
            ))
    return values


def _described(
    value: ConfigValue, request: DescribeConfigsRequest, version: int
) -> DescribeConfigsResponseResourceResult:
    synonyms: tuple[DescribeConfigsResponseSynonym, ...] = ()
    if request.include_synonyms and version >= 1:
        synonyms = tuple(
            DescribeConfigsResponseSynonym(name=key, value=text, source=source)
            for source, key, text in value.synonyms
        )
    return DescribeConfigsResponseResourceResult(
        name=value.name,
        value=value.value,
        read_only=False,
        # a v0-only field: later versions must leave it at its default
        is_default=version == 0 and value.source == ConfigSource.DEFAULT_CONFIG,
        config_source=value.source,
        is_sensitive=False,
        synonyms=synonyms,
        config_type=value.kind,
        documentation=value.doc if request.include_documentation else None,
    )


def _describe_one(
    image: MetadataImage, resource: DescribeConfigsRequestResource, ctx: ControllerContext
) -> list[ConfigValue]:
    rejected = resource_problem(image, resource.resource_type, resource.resource_name, ctx)
    if rejected is not None:
        raise rejected
    if resource.resource_type == ConfigResourceType.BROKER:
        return _broker_values(image, resource.resource_name, ctx)
    factor = _replication_factor(image, resource.resource_name)
    if factor is None:
        raise Rejected(
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            f"The topic '{resource.resource_name}' does not exist.",
        )
    overrides = image.topic_configs(resource.resource_name)
    return resolve_topic_configs(image, overrides, ctx.config, factor)


def _wanted_keys(
    resource: DescribeConfigsRequestResource, budget: SliceBudget
) -> Generator[Slice, None, set[str]]:
    """The config keys a resource names (empty: every one), a key per unit."""
    wanted: set[str] = set()
    for name in resource.configuration_keys or ():
        yield from budget.take()
        wanted.add(name)
    return wanted


def _describe_result(
    image: MetadataImage,
    resource: DescribeConfigsRequestResource,
    wanted: set[str],
    request: DescribeConfigsRequest,
    version: int,
    ctx: ControllerContext,
) -> DescribeConfigsResponseResult:
    error, message = Errors.NONE, None
    configs: tuple[DescribeConfigsResponseResourceResult, ...] = ()
    try:
        values = _describe_one(image, resource, ctx)
    except Rejected as rejected:
        error, message = rejected.error, rejected.message
    else:
        configs = tuple(
            _described(v, request, version) for v in values if not wanted or v.name in wanted
        )
    return DescribeConfigsResponseResult(
        error_code=error,
        error_message=message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=configs,
    )


def describe_configs_steps(
    image: MetadataImage, request: DescribeConfigsRequest, version: int, ctx: ControllerContext
) -> Steps[DescribeConfigsResponse]:
    """Every known config of each resource (or the named ones), with its source: a unit
    per config a resource resolves and per key it names, paused as the budget runs out."""
    budget = SliceBudget()
    results = []
    for resource in request.resources:
        wanted = yield from _wanted_keys(resource, budget)
        yield from budget.take(_UNITS_PER_DESCRIBED_RESOURCE)
        results.append(_describe_result(image, resource, wanted, request, version, ctx))
    yield from budget.emit(())
    return DescribeConfigsResponse(results=tuple(results))


describe_configs = at_once("DescribeConfigs", describe_configs_steps)
