"""``kraft reassign-partitions``: Kafka's ``kafka-reassign-partitions.sh`` for pykraft.

Kafka's actions, option names, JSON formats and output lines, through the
client library's ``Admin``: to brokers (``--bootstrap-server``, as Kafka's
tool) or straight to the active controller (``--bootstrap-controller``), with
``--command-config`` for the admin client's settings:

- ``--generate --topics-to-move-json-file F --broker-list 1,2,3`` prints the
  current assignment and a proposal in Kafka's reassignment JSON. The proposal
  is ``plan_reassignment``'s (balanced replicas and preferred leaders, few
  replicas moved), not Kafka's random placement, and lists only the partitions
  whose replica list changes; a last line compares the replicas moved with the
  fewest any balanced plan moves.
- ``--balance`` (pykraft's own): the same over every topic and every
  registered broker, for example after brokers were added.
- ``--execute``, ``--verify``, ``--cancel`` (``--reassignment-json-file``) and
  ``--list``: AlterPartitionReassignments and ListPartitionReassignments.

Not offered: throttles and moves between log directories, which pykraft's
brokers do not have. The async cores take an ``Admin`` (tests call them inside
a nursery); the text formats live in ``cli.reassign_json``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs
import click

from broker.client import Admin, KafkaError
from broker.client.admin_types import PartitionReassignment
from cli.admin_target import admin_config, client_partition, image_partition, run_admin
from cli.console import fail
from cli.reassign_json import (
    Assignment,
    Proposal,
    ReassignmentError,
    generate_lines,
    ids_text,
    list_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_to_move,
    partition_name,
    reassignment_json,
    verify_lines,
)
from quorum.controller.placement import PlacementError, UsableBroker
from quorum.controller.reassignment_plan import TopicPartition, plan_reassignment

__all__ = [
    "Outcome",
    "balance_plan",
    "cancel_reassignments",
    "execute_reassignment",
    "generate_plan",
    "image_assignment",
    "list_reassignments",
    "ongoing_reassignments",
    "propose",
    "reassign_partitions",
    "verify_reassignment",
]

T = TypeVar("T")
_CANNOT_EXECUTE: Final = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one."
)


@attrs.frozen
class Outcome:
    """Lines for stdout, then (when set) why the command failed (stderr, exit 1)."""

    lines: tuple[str, ...]
    failure: str | None = None


# -- the image ----------------------------------------------------------------------------


def image_assignment(image: dict[str, Any]) -> Assignment:
    return {
        TopicPartition(t["name"], p["partition"]): tuple(p["replicas"])
        for t in image.get("topics", []) for p in t["partitions"]
    }


def _usable_brokers(
    image: dict[str, Any], wanted: Sequence[int] | None, rack_aware: bool
) -> list[UsableBroker]:
    registered = {b["brokerId"]: b for b in image.get("brokers", [])}
    if not registered:
        raise ReassignmentError("No brokers are registered with the controller")
    unknown = [b for b in wanted or () if b not in registered]
    if unknown:
        raise ReassignmentError(f"Unknown broker id {unknown[0]}")
    brokers = [
        UsableBroker(id=b["brokerId"], rack=b["rack"] if rack_aware else None, fenced=b["fenced"])
        for i, b in sorted(registered.items()) if wanted is None or i in wanted
    ]
    racks = {b.rack is None for b in brokers}
    if len(racks) > 1:
        raise ReassignmentError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information."
        )
    return brokers


def propose(
    image: dict[str, Any], topics: Sequence[str] | None, brokers: Sequence[int] | None,
    *, rack_aware: bool = True,
) -> Proposal:
    """The plan for ``topics`` (None: all) over ``brokers`` (None: every registered one)."""
    known = {t["name"]: t for t in image.get("topics", [])}
    for name in topics or ():
        if name not in known:
            raise ReassignmentError(f"Topic {name} not found.")
    chosen = [known[n] for n in (sorted(known) if topics is None else topics)]
    if not chosen:
        raise ReassignmentError("There are no topics to reassign")
    current: Assignment = {}
    for topic in chosen:
        for p in topic["partitions"]:
            tp = TopicPartition(topic["name"], p["partition"])
            if p["addingReplicas"] or p["removingReplicas"]:
                raise ReassignmentError(
                    f"{partition_name(tp)} is being reassigned (replicas "
                    f"{ids_text(p['replicas'])}): wait until it completes, or --cancel it, "
                    "before planning"
                )
            current[tp] = tuple(p["replicas"])
    try:
        plan = plan_reassignment(current, _usable_brokers(image, brokers, rack_aware))
    except PlacementError as exc:
        raise ReassignmentError(f"No reassignment is possible: {exc}") from None
    return Proposal(current=dict(sorted(current.items())), plan=plan)


async def _alter(
    admin: Admin, targets: Mapping[TopicPartition, Sequence[int] | None]
) -> list[str]:
    """AlterPartitionReassignments; ``t-0: message`` for each refused partition, in order."""
    try:
        results = await admin.alter_partition_reassignments(
            {client_partition(tp): replicas for tp, replicas in sorted(targets.items())},
            raise_on_error=False,
        )
    except KafkaError as exc:
        return [f"all partitions: {exc.server_message or exc}"]
    refused = {
        image_partition(tp): error.server_message or (error.error.name if error.error else error.name)
        for tp, error in results.items() if error is not None
    }
    return [f"{partition_name(tp)}: {message}" for tp, message in sorted(refused.items())]


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


# -- async cores (one Admin each) ----------------------------------------------------------


async def _image(admin: Admin) -> dict[str, Any]:
    try:
        return await admin.describe_image()
    except KafkaError as exc:
        raise ReassignmentError(f"The metadata image could not be read: {exc}") from None


async def ongoing_reassignments(
    admin: Admin, partitions: Iterable[TopicPartition] | None = None
) -> dict[TopicPartition, PartitionReassignment]:
    """ListPartitionReassignments: all ongoing ones, or those among ``partitions``."""
    wanted = None if partitions is None else [client_partition(tp) for tp in partitions]
    try:
        ongoing = await admin.list_partition_reassignments(wanted)
    except KafkaError as exc:
        raise ReassignmentError(
            f"Listing partition reassignments failed: {exc.server_message or exc}"
        ) from None
    return {image_partition(tp): o for tp, o in ongoing.items()}


async def generate_plan(
    admin: Admin, topics: Sequence[str], brokers: Sequence[int],
    *, rack_aware: bool = True,
) -> Proposal:
    return propose(await _image(admin), topics, brokers, rack_aware=rack_aware)


async def balance_plan(admin: Admin, *, rack_aware: bool = True) -> Proposal:
    return propose(await _image(admin), None, None, rack_aware=rack_aware)


async def execute_reassignment(
    admin: Admin, targets: Assignment, *, additional: bool = False
) -> Outcome:
    if not additional and await ongoing_reassignments(admin):
        raise ReassignmentError(_CANNOT_EXECUTE)
    image = await _image(admin)
    registered = {b["brokerId"] for b in image.get("brokers", [])}
    unknown = sorted({r for replicas in targets.values() for r in replicas} - registered)
    if unknown:
        raise ReassignmentError(f"Unknown broker id {unknown[0]}")
    current = image_assignment(image)
    missing = [tp for tp in targets if tp not in current]
    if missing:
        names = ", ".join(map(partition_name, missing))
        raise ReassignmentError(f"Unable to find partition: {names}")
    lines = [
        "Current partition replica assignment", "",
        reassignment_json({tp: current[tp] for tp in targets}), "",
        "Save this to use as the --reassignment-json-file option during rollback",
    ]
    errors = await _alter(admin, targets)
    if errors:
        return Outcome(tuple(lines), "Error reassigning partition(s):\n" + "\n".join(errors))
    lines.append(
        f"Successfully started partition reassignment{_plural(len(targets))} for "
        + ",".join(map(partition_name, targets))
    )
    return Outcome(tuple(lines))


async def verify_reassignment(admin: Admin, targets: Assignment) -> Outcome:
    ongoing = await ongoing_reassignments(admin)
    return Outcome(tuple(verify_lines(targets, ongoing, image_assignment(await _image(admin)))))


async def cancel_reassignments(admin: Admin, targets: Assignment) -> Outcome:
    active = sorted(await ongoing_reassignments(admin, targets))
    if not active:
        return Outcome(("None of the specified partition reassignments are active.",))
    errors = await _alter(admin, dict.fromkeys(active))
    if errors:
        return Outcome((), f"Error cancelling partition reassignment{_plural(len(errors))} "
                           "for:\n" + "\n".join(errors))
    return Outcome((
        f"Successfully cancelled partition reassignment{_plural(len(active))} for: "
        + ",".join(map(partition_name, active)),
    ))


async def list_reassignments(admin: Admin) -> Outcome:
    return Outcome(tuple(list_lines(await ongoing_reassignments(admin))))


# -- the command --------------------------------------------------------------------------

_ACTIONS: Final = ("generate", "execute", "verify", "cancel", "list", "balance")
# action -> (required arguments, other permitted arguments), as Kafka's tool checks them
_ARGUMENTS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "generate": (("topics-to-move-json-file", "broker-list"), ("disable-rack-aware",)),
    "balance": ((), ("disable-rack-aware",)),
    "execute": (("reassignment-json-file",), ("additional",)),
    "verify": (("reassignment-json-file",), ()),
    "cancel": (("reassignment-json-file",), ()),
    "list": ((), ()),
}


def _checked_action(actions: Mapping[str, bool], arguments: Mapping[str, object]) -> str:
    chosen = [a for a in _ACTIONS if actions[a]]
    if len(chosen) != 1:
        fail("Command must include exactly one action: " + ", ".join(f"--{a}" for a in _ACTIONS))
    action = chosen[0]
    required, permitted = _ARGUMENTS[action]
    given = [name for name, value in arguments.items() if value]
    for name in required:
        if name not in given:
            fail(f'Missing required argument "[{name}]"')
    for name in given:
        if name not in required and name not in permitted:
            fail(f'Option "[{name}]" can\'t be used with action "[{action}]"')
    return action


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise ReassignmentError(f"Cannot read {path}: {exc.strerror}") from None


def _run(config: dict[str, str], core: Callable[[Admin], Awaitable[T]]) -> T:
    try:
        return run_admin(config, core)
    except KafkaError as exc:
        raise ReassignmentError(str(exc)) from None


def _dispatch(action: str, bootstrap: dict[str, str], options: Mapping[str, Any]) -> Outcome:
    rack_aware = not options["disable-rack-aware"]
    if action == "generate":
        topics = parse_topics_to_move(_read(options["topics-to-move-json-file"]))
        brokers = parse_broker_list(options["broker-list"])
        proposal = _run(bootstrap, lambda c: generate_plan(c, topics, brokers,
                                                           rack_aware=rack_aware))
        return Outcome(tuple(generate_lines(proposal)))
    if action == "balance":
        proposal = _run(bootstrap, lambda c: balance_plan(c, rack_aware=rack_aware))
        return Outcome(tuple(generate_lines(proposal)))
    if action == "list":
        return _run(bootstrap, list_reassignments)
    targets = parse_reassignment_json(_read(options["reassignment-json-file"]))
    cores: dict[str, Callable[[Admin], Awaitable[Outcome]]] = {
        "execute": lambda c: execute_reassignment(c, targets, additional=options["additional"]),
        "verify": lambda c: verify_reassignment(c, targets),
        "cancel": lambda c: cancel_reassignments(c, targets),
    }
    return _run(bootstrap, cores[action])


@click.command(name="reassign-partitions",
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="Broker host:port list.")
@click.option("--bootstrap-controller", help="Controller host:port list.")
@click.option("--command-config",
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--generate", is_flag=True, help="Propose a reassignment of some topics.")
@click.option("--balance", is_flag=True, help="Propose a balanced layout of every topic.")
@click.option("--execute", is_flag=True, help="Start the reassignment of a JSON file.")
@click.option("--verify", is_flag=True, help="Say whether a JSON file's reassignment is done.")
@click.option("--cancel", is_flag=True, help="Cancel the active reassignments of a JSON file.")
@click.option("--list", "list_", is_flag=True, help="List the active reassignments.")
@click.option("--topics-to-move-json-file", help='{"version":1,"topics":[{"topic":"foo"}]}')
@click.option("--broker-list", help="Brokers to move the topics to, like 1,2,3.")
@click.option("--reassignment-json-file", help="Kafka's reassignment JSON (from --generate).")
@click.option("--disable-rack-aware", is_flag=True, help="Ignore the brokers' racks.")
@click.option("--additional", is_flag=True, help="Execute beside ongoing reassignments.")
def reassign_partitions(
    bootstrap_server: str | None, bootstrap_controller: str | None, command_config: str | None,
    generate: bool, balance: bool, execute: bool,
    verify: bool, cancel: bool, list_: bool, topics_to_move_json_file: str | None,
    broker_list: str | None, reassignment_json_file: str | None, disable_rack_aware: bool,
    additional: bool,
) -> None:
    """Move partition replicas between brokers (kafka-reassign-partitions.sh)."""
    options = {
        "topics-to-move-json-file": topics_to_move_json_file, "broker-list": broker_list,
        "reassignment-json-file": reassignment_json_file,
        "disable-rack-aware": disable_rack_aware, "additional": additional,
    }
    action = _checked_action(
        {"generate": generate, "execute": execute, "verify": verify, "cancel": cancel,
         "list": list_, "balance": balance},
        options,
    )
    config = admin_config(
        server=bootstrap_server, controller=bootstrap_controller, command_config=command_config,
        both="Only one of --bootstrap-server or --bootstrap-controller must be specified",
        neither='Missing required argument "[bootstrap-server]"',
    )
    try:
        outcome = _dispatch(action, config, options)
    except ReassignmentError as exc:
        fail(str(exc))
    for line in outcome.lines:
        click.echo(line)
    if outcome.failure is not None:
        fail(outcome.failure)
