"""``kraft dump-log`` and ``kraft metadata-shell``: offline looks at a metadata log.

``dump-log FILE...`` prints segment (``.log``) and snapshot (``.checkpoint``)
files as Kafka's ``kafka-dump-log.sh --cluster-metadata-decoder --files``
does: a line per batch, then a line per record with the metadata record as
JSON (``--no-print-records`` for batches only, ``--skip-record-metadata``
for ``| offset: N payload: {...}``). ``metadata-shell --directory DIR``
builds the image from the latest snapshot in ``__cluster_metadata-0`` and
the log after it and prints it as a tree, as JSON (``--json``) or as
``offset epoch digest`` (``--digest``); it is not interactive like Kafka's
shell. Both only read files: run them against a stopped node.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any, Final

import click
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from cli.console import fail, show
from quorum.controller.digest import image_digest, short_digest
from quorum.controller.image import BrokerRegistration, MetadataImage
from quorum.controller.image_json import image_to_json, message_to_json, metadata_record_json
from quorum.controller.log_records import MetadataLogError
from quorum.controller.metadata_dir import (
    BatchFileReader,
    OfflineImage,
    RawBatch,
    load_metadata_image,
)
from quorum.controller.snapshot import SnapshotFormatError
from quorum.wire.batch import ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE
from quorum.wire.codec import decode
from quorum.wire.compression import Compression
from quorum.wire.control import LEADER_CHANGE_VERSION, ControlRecordType
from quorum.wire.errors import WireError
from quorum.wire.messages.control_records import (
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from quorum.wire.records import DecodedBatch, Record, decode_batch
from quorum.wire.uuids import uuid_to_str

__all__ = ["dump_log", "metadata_shell", "render_dump", "render_image_tree"]

_CONTROL_KEY: Final = struct.Struct(">hh")
# control record type -> (label, schema class, version) for the ones shown decoded
_CONTROL_DECODERS: Final[dict[int, tuple[str, type, int]]] = {
    ControlRecordType.LEADER_CHANGE: ("LeaderChange:", LeaderChangeMessage, LEADER_CHANGE_VERSION),
    ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeader", SnapshotHeaderRecord, 0),
    ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooter", SnapshotFooterRecord, 0),
    ControlRecordType.KRAFT_VOTERS: ("KRaftVoters", VotersRecord, 0),
}
_INT32_SPAN: Final = 1 << 31
_NO_WRAP_WIDTH: Final = 1 << 20


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _bool(value: bool) -> str:
    return "true" if value else "false"


# -- dump-log -----------------------------------------------------------------------------


def _timestamp_type(attributes: int) -> str:
    return "LogAppendTime" if attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"


def _sequence(base_sequence: int, delta: int) -> int:
    # Kafka's sequences wrap from Integer.MAX_VALUE to 0
    return -1 if base_sequence == -1 else (base_sequence + delta) % _INT32_SPAN


def _control_type_name(type_id: int) -> str:
    try:
        return ControlRecordType(type_id).name
    except ValueError:
        return "UNKNOWN"


def batch_line(raw: RawBatch) -> str:
    """Kafka's batch line: offsets, producer fields, position, size, CRC and whether it holds."""
    h = raw.header
    horizon = (
        f"OptionalLong[{h.base_timestamp}]"
        if h.attributes & ATTR_DELETE_HORIZON
        else "OptionalLong.empty"
    )
    codec = Compression(h.compression).name.lower() if h.compression <= 4 else str(h.compression)
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
        f"baseSequence: {h.base_sequence} "
        f"lastSequence: {_sequence(h.base_sequence, h.last_offset_delta)} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} "
        f"deleteHorizonMs: {horizon} position: {raw.position} "
        f"{_timestamp_type(h.attributes)}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {codec} crc: {h.crc} isvalid: {_bool(raw.crc_valid)}"
    )


def _control_text(record: Record) -> str:
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        return " controlType: unreadable (the key is shorter than 4 bytes)"
    _, type_id = _CONTROL_KEY.unpack_from(key)
    known = _CONTROL_DECODERS.get(type_id)
    if known is None or record.value is None:
        return f" controlType: {_control_type_name(type_id)}({type_id})"
    label, cls, version = known
    try:
        return f" {label} {_json(message_to_json(decode(cls, version, record.value), version))}"
    except WireError as exc:
        return f" {label} unreadable: {exc}"


def _payload_text(offset: int, record: Record) -> str:
    if record.value is None:
        return f" payload: Error at {offset}, skipping. The record has no value."
    try:
        return f" payload: {_json(metadata_record_json(record.value))}"
    except WireError as exc:
        return f" payload: Error at {offset}, skipping. {exc}"


def record_line(batch: DecodedBatch, record: Record, *, skip_record_metadata: bool) -> str:
    offset = batch.offset_of(record)
    h = batch.header
    line = f"| offset: {offset}"
    if not skip_record_metadata:
        line += (
            f" {_timestamp_type(h.attributes)}: {batch.timestamp_of(record)} "
            f"keySize: {-1 if record.key is None else len(record.key)} "
            f"valueSize: {-1 if record.value is None else len(record.value)} "
            f"sequence: {_sequence(h.base_sequence, record.offset_delta)} "
            f"headerKeys: [{','.join(x.key for x in record.headers)}]"
        )
    if h.is_control:
        return line + _control_text(record)
    return line + _payload_text(offset, record)


def _file_heading(path: Path) -> list[str] | None:
    name = path.name
    if name.endswith(".log"):
        return [f"Dumping {path}", f"Log starting offset: {int(name.split('.')[0])}"]
    if name.endswith(".checkpoint"):
        offset, _, epoch = name.removesuffix(".checkpoint").partition("-")
        return [f"Dumping {path}", f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}"]
    return None


def render_dump(
    path: Path, *, print_records: bool = True, skip_record_metadata: bool = False
) -> Text:
    """The dump of one segment or snapshot file; raises ValueError for other files."""
    try:
        lines = _file_heading(path)
    except ValueError:
        lines = None
    if lines is None:
        raise ValueError(f"Ignoring unknown file {path}")
    reader = BatchFileReader(path)
    for raw in reader:
        lines.append(batch_line(raw))
        if not print_records:
            continue
        try:
            batch = decode_batch(raw.data)
        except WireError as exc:
            lines.append(f"| the records of this batch cannot be decoded: {exc}")
            continue
        lines += [
            record_line(batch, r, skip_record_metadata=skip_record_metadata) for r in batch.records
        ]
    if reader.trailing_bytes:
        lines.append(f"Found {reader.trailing_bytes} invalid bytes at the end of {path.name}")
    return Text("\n".join(lines))


@click.command("dump-log")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--files", "files_option", multiple=True,
              help="Comma-separated segment or snapshot files to dump (Kafka's option).")
@click.option("--print-records/--no-print-records", default=True, show_default=True,
              help="Print each record (metadata records as JSON), not only batch lines.")
@click.option("--skip-record-metadata", is_flag=True,
              help="Print only each record's offset and payload.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Accepted for Kafka's command lines; records are always metadata records.")
def dump_log(files: tuple[Path, ...], files_option: tuple[str, ...], print_records: bool,
             skip_record_metadata: bool, cluster_metadata_decoder: bool) -> None:
    """Print the batches and records of metadata log segments and snapshots."""
    paths = [*files, *(Path(p) for opt in files_option for p in opt.split(",") if p)]
    if not paths:
        fail("Missing required argument \"[files]\"")
    for path in paths:
        try:
            show(render_dump(path, print_records=print_records,
                             skip_record_metadata=skip_record_metadata))
        except ValueError as exc:
            click.echo(str(exc), err=True)
        except OSError as exc:
            fail(f"Cannot read {path}: {exc.strerror or exc}")


# -- metadata-shell -----------------------------------------------------------------------


def _broker_label(broker: BrokerRegistration) -> str:
    state = "fenced" if broker.fenced else "active"
    if broker.in_controlled_shutdown:
        state += ", in controlled shutdown"
    listeners = ", ".join(f"{e.name}://{e.host}:{e.port}" for e in broker.listeners)
    rack = f", rack {broker.rack}" if broker.rack else ""
    return f"{broker.broker_id}: epoch {broker.epoch}, {state}{rack}, listeners {listeners or '-'}"


def _add_topics(tree: Tree, image: MetadataImage) -> None:
    topics = tree.add(Text("topics"))
    for name in sorted(image.topic_ids_by_name):
        topic = image.topics_by_id[image.topic_ids_by_name[name]]
        node = topics.add(Text(f"{name} (id {uuid_to_str(topic.topic_id)})"))
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            moving = (
                f", adding {list(p.adding_replicas)}, removing {list(p.removing_replicas)}"
                if p.is_reassigning else ""
            )
            node.add(Text(
                f"partition {index}: leader {p.leader}, leader epoch {p.leader_epoch}, "
                f"partition epoch {p.partition_epoch}, replicas {list(p.replicas)}, "
                f"isr {list(p.isr)}{moving}"
            ))


def render_image_tree(offline: OfflineImage) -> Tree:
    """The image as a tree: features, brokers, topics with partitions, configs, producer ids."""
    image = offline.image
    source = "the empty image" if offline.snapshot_id is None else (
        f"snapshot {offline.snapshot_id.offset}-{offline.snapshot_id.epoch}"
    )
    tree = Tree(Text(
        f"metadata image at offset {image.provenance.offset}, epoch {image.provenance.epoch} "
        f"(digest {short_digest(image_digest(image))}; {source} "
        f"+ {offline.log_record_count} log records)"
    ))
    features = tree.add(Text("features"))
    for name in sorted(image.features):
        features.add(Text(f"{name} = {image.features[name]}"))
    brokers = tree.add(Text("brokers"))
    for broker_id in sorted(image.brokers):
        brokers.add(Text(_broker_label(image.brokers[broker_id])))
    _add_topics(tree, image)
    configs = tree.add(Text("configs"))
    for resource in sorted(image.configs):
        node = configs.add(Text(f"{resource.type.name.lower()} {resource.name!r}"))
        values = image.configs[resource]
        for key in sorted(values):
            node.add(Text(f"{key} = {values[key]}"))
    tree.add(Text(f"next producer id {image.next_producer_id}"))
    return tree


def _unwrapped(renderable: Tree) -> Text:
    # the terminal's width would cut tree lines; scripts read them whole, as Kafka's tools print
    buffer = io.StringIO()
    console = Console(file=buffer, width=_NO_WRAP_WIDTH, markup=False, highlight=False,
                      emoji=False, color_system=None)
    console.print(renderable)
    return Text(buffer.getvalue().rstrip("\n"))


@click.command("metadata-shell")
@click.option("--directory", "-d", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The metadata.log.dir of a node (or its __cluster_metadata-0 directory).")
@click.option("--print-image", "mode", flag_value="image", default=True,
              help="Print the whole image (the default).")
@click.option("--digest", "mode", flag_value="digest",
              help="Print only 'offset epoch digest' of the image.")
@click.option("--json", "as_json", is_flag=True, help="Print the image as JSON.")
def metadata_shell(directory: Path, mode: str, as_json: bool) -> None:
    """Build the metadata image from a node's log directory and print it."""
    try:
        offline = load_metadata_image(directory)
    except (MetadataLogError, SnapshotFormatError) as exc:
        fail(f"Cannot build the metadata image from {directory}: {exc}")
    except OSError as exc:
        fail(f"Cannot read {directory}: {exc.strerror or exc}")
    if offline.torn_tail_bytes:
        click.echo(f"Ignored {offline.torn_tail_bytes} bytes at the end of the log "
                   "that are not a whole, valid batch (a torn write).", err=True)
    image = offline.image
    if mode == "digest":
        show(Text(f"{image.provenance.offset} {image.provenance.epoch} {image_digest(image)}"))
    elif as_json:
        show(Text(json.dumps(image_to_json(image), indent=2)))
    else:
        show(_unwrapped(render_image_tree(offline)))
