"""``kraft consumer-groups``: Kafka's ``kafka-consumer-groups.sh`` on the client library's ``Admin``.

``--list`` (``--state``/``--type`` for a table), ``--describe`` (offsets and
lag by default, ``--members [--verbose]``, ``--state``), ``--delete``,
``--delete-offsets`` and ``--reset-offsets`` (dry run unless ``--execute``;
only for a group without members, as Kafka's) with Kafka's option names,
checks, messages and output layouts (``consumer_groups_render``; the reset
scenarios in ``consumer_groups_reset``). Option errors go to stderr with
status 1, as Kafka's; errors found while running are printed where Kafka
prints them (``Error: ...`` on stdout) and, unlike Kafka's tool, which then
exits 0, end the command with status 1.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final

import attrs
import click

from broker.client import Admin, GroupListing, KafkaError, OffsetSpec, TopicPartition
from cli.admin_target import admin_config, run_admin
from cli.console import fail
from cli.consumer_groups_render import (
    Output,
    delete_groups_text,
    delete_offsets_text,
    list_text,
    members_text,
    offset_rows,
    offsets_text,
    reset_plan_text,
    state_text,
)
from cli.consumer_groups_reset import (
    SCENARIOS,
    ResetScenario,
    UsageError,
    clamp_offsets,
    export_csv,
    parse_topic_args,
    partitions_of,
    prepare_offsets,
    read_reset_plan,
)

__all__ = ["GroupOptions", "check_options", "consumer_groups"]

ACTIONS: Final = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
STATES: Final = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                 "Assigning", "Reconciling")
TYPES: Final = ("Consumer", "Classic", "Share")
_NO_EXECUTE: Final = (
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)


@attrs.frozen(kw_only=True)
class GroupOptions:
    """The command line as Kafka's ``ConsumerGroupCommandOptions`` sees it (None: not given)."""

    actions: tuple[str, ...]
    groups: tuple[str, ...] = ()
    all_groups: bool = False
    topics: tuple[str, ...] = ()
    all_topics: bool = False
    members: bool = False
    verbose: bool = False
    offsets: bool = False
    state: str | None = None
    group_type: str | None = None
    dry_run: bool = False
    execute: bool = False
    export: bool = False
    scenarios: tuple[ResetScenario, ...] = ()
    timeout_ms: int = 5000


def _scope_error(action: str, names: str) -> str:
    return f"Option [{action}] takes one of these options: {names}"


def check_options(o: GroupOptions) -> str | None:
    """Kafka's checks in Kafka's order: the first complaint, or None."""
    has = set(o.actions)
    for name, given, allowed in (("members", o.members, {"describe"}),
                                 ("verbose", o.verbose, {"describe"}),
                                 ("offsets", o.offsets, {"describe"}),
                                 ("state", o.state is not None, {"describe", "list"}),
                                 ("type", o.group_type is not None, {"list"})):
        if given and not has & allowed:
            return f"Option(s) [{name}] are unavailable given other options on the command line"
    scoped = bool(o.groups) or o.all_groups
    if "describe" in has:
        if not scoped:
            return _scope_error("describe", "[group], [all-groups]")
        if int(o.members) + int(o.offsets) + int(o.state is not None) > 1:
            return "Option [describe] takes at most one of these options: [members], [offsets], [state]"
        if o.state:
            return "Option [describe] does not take a value for [state]"
    if "delete" in has:
        if not scoped:
            return _scope_error("delete", "[group], [all-groups]")
        if o.topics:
            return "The consumer does not support topic-specific offset deletion from a consumer group."
    if "delete-offsets" in has and (not o.groups or not o.topics):
        return "Option [delete-offsets] takes the following options: [group], [topic]"
    if "reset-offsets" in has:
        if o.dry_run and o.execute:
            return "Option [reset-offsets] only accepts one of [execute] and [dry-run]"
        if not scoped:
            return _scope_error("reset-offsets", "[group], [all-groups]")
        if len(o.scenarios) > 1:
            return (f'Option "[{o.scenarios[0].name}]" can\'t be used with option '
                    f'"[{o.scenarios[1].name}]"')
    for used, present, against in (("group", bool(o.groups), ("all-groups", "list")),
                                   ("topic", bool(o.topics), ("list", "describe"))):
        for other in against:
            if present and (other in has or (other == "all-groups" and o.all_groups)):
                return f'Option "[{used}]" can\'t be used with option "[{other}]"'
    if len(o.actions) != 1:
        return ("Command must include exactly one action: --list, --describe, --delete, "
                "--reset-offsets, --delete-offsets")
    if o.actions == ("reset-offsets",):
        if not o.scenarios:
            return ("Option '[reset-offsets]' requires one of the following scenarios: "
                    f"[{'], ['.join(SCENARIOS)}]")
        if o.scenarios[0].name != "from-file" and not o.topics and not o.all_topics:
            return "One of the reset scopes should be defined: --all-topics, --topic."
    return None


def _parsed_filter(text: str | None, valid: Sequence[str], what: str) -> set[str]:
    """``--state stable,empty`` / ``--type classic``: Kafka's names, case-insensitively."""
    if not text:
        return set()
    by_lower = {v.lower(): v for v in valid}
    found = {by_lower.get(v.strip().lower(), "") for v in text.split(",")}
    if "" in found:
        raise UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return found


async def _consumer_groups(admin: Admin, o: GroupOptions) -> list[GroupListing]:
    # Kafka's listConsumerGroups: groups of the consumer protocol, and those without one
    listed = await admin.list_groups(timeout_ms=o.timeout_ms)
    return [g for g in listed if g.protocol_type in ("consumer", "")]


async def _group_ids(admin: Admin, o: GroupOptions) -> list[str]:
    if o.all_groups:
        return [g.group_id for g in await _consumer_groups(admin, o)]
    return list(dict.fromkeys(o.groups))


async def _committed(admin: Admin, group: str, o: GroupOptions) -> dict[TopicPartition, int]:
    found = await admin.list_group_offsets(group, timeout_ms=o.timeout_ms)
    return {tp: meta.offset for tp, meta in found.items()}


async def list_groups(admin: Admin, o: GroupOptions) -> Output:
    output = Output()
    if o.state is None and o.group_type is None:
        output.out += [f"{g.group_id}\n" for g in await _consumer_groups(admin, o)]
        return output
    states = _parsed_filter(o.state, STATES, "state")
    types = _parsed_filter(o.group_type, TYPES, "type")
    listed = await admin.list_groups(states=sorted(states), timeout_ms=o.timeout_ms)
    shown = [g for g in listed if g.protocol_type in ("consumer", "")
             and (not types or (g.group_type or "Unknown").capitalize() in types)]
    output.out.append(list_text(shown, with_type=o.group_type is not None,
                                with_state=o.state is not None))
    return output


async def describe_groups(admin: Admin, o: GroupOptions) -> Output:
    output = Output()
    described = await admin.describe_groups(await _group_ids(admin, o), timeout_ms=o.timeout_ms)
    for group in sorted(described):
        description = described[group]
        if o.members:
            members_text(output, description, verbose=o.verbose)
        elif o.state is not None:
            state_text(output, description)
        else:
            committed = {} if description.state == "Dead" else await _committed(admin, group, o)
            partitions = {tp for m in description.members for tp in m.assignment} | set(committed)
            ends: dict[TopicPartition, int] = {}
            if partitions:
                found = await admin.list_offsets(dict.fromkeys(partitions, OffsetSpec.LATEST),
                                                 timeout_ms=o.timeout_ms)
                ends = {tp: at.offset for tp, at in found.items() if at is not None}
            rows = offset_rows(description, committed, ends)
            offsets_text(output, group, description.state, rows)
    return output


async def _reset_scope(admin: Admin, group: str, o: GroupOptions,
                       committed: dict[TopicPartition, int]) -> list[TopicPartition]:
    if o.all_topics:
        return sorted(committed)
    bare, named = parse_topic_args(o.topics)
    return sorted({*named, *await partitions_of(admin, bare, o.timeout_ms)})


async def reset_offsets(admin: Admin, o: GroupOptions) -> Output:
    output, plan = Output(), dict[str, dict[TopicPartition, int]]()
    scenario = o.scenarios[0]
    file_plan = None
    if scenario.name == "from-file":  # its value: the file's text, read by ``run``
        file_plan = read_reset_plan(str(scenario.value), o.groups)
    groups = await _group_ids(admin, o)
    described = await admin.describe_groups(groups, timeout_ms=o.timeout_ms)
    for group in groups:
        state = described[group].state
        if state not in ("Empty", "Dead"):
            output.error(f"Assignments can only be reset if the group '{group}' is inactive, "
                         f"but the current state is {state}.")
            plan[group] = {}
            continue
        committed = await _committed(admin, group, o)
        if file_plan is not None:
            if group not in file_plan:
                output.error(f"No reset plan for group {group} found")
                plan[group] = {}
                continue
            offsets = await clamp_offsets(admin, file_plan[group], o.timeout_ms, output)
        else:
            partitions = await _reset_scope(admin, group, o, committed)
            offsets = await prepare_offsets(admin, scenario, partitions, committed,
                                            o.timeout_ms, output, int(time.time() * 1000))
        if o.execute:
            await admin.alter_group_offsets(group, offsets, timeout_ms=o.timeout_ms)
        plan[group] = offsets
    if o.export:
        output.out.append(export_csv(plan, single=len(o.groups) == 1) + "\n")
    else:
        output.out.append(reset_plan_text(plan))
    return output


async def delete_groups(admin: Admin, o: GroupOptions) -> Output:
    output = Output()
    groups = await _group_ids(admin, o)
    outcome = await admin.delete_groups(groups, timeout_ms=o.timeout_ms, raise_on_error=False)
    failed = {g: str(e) for g, e in outcome.items() if e is not None}
    delete_groups_text(output, [g for g in groups if g not in failed], failed)
    return output


async def delete_offsets(admin: Admin, o: GroupOptions) -> Output:
    output, group = Output(), o.groups[0]
    bare, named = parse_topic_args(o.topics)
    outcome: dict[TopicPartition, str | None] = {}
    partitions = set(named)
    for topic in dict.fromkeys(bare):
        try:
            partitions.update(await partitions_of(admin, [topic], o.timeout_ms))
        except KafkaError as exc:
            outcome[TopicPartition(topic, -1)] = str(exc)
    top_error = None
    if partitions:
        try:
            results = await admin.delete_group_offsets(group, sorted(partitions),
                                                       timeout_ms=o.timeout_ms,
                                                       raise_on_error=False)
        except KafkaError as exc:
            top_error = exc.name
            results = dict.fromkeys(partitions, exc)
        for tp in sorted(partitions):
            error = results.get(tp)
            outcome[tp] = None if error is None else str(error)
            if error is not None and top_error is None:
                top_error = error.name
    delete_offsets_text(output, group, o.topics, top_error, outcome)
    return output


_RUN: Final[dict[str, Callable[[Admin, GroupOptions], Awaitable[Output]]]] = {
    "list": list_groups, "describe": describe_groups, "delete": delete_groups,
    "reset-offsets": reset_offsets, "delete-offsets": delete_offsets,
}


def _scenarios(to_offset: int | None, shift_by: int | None, to_datetime: str | None,
               by_duration: str | None, to_earliest: bool, to_latest: bool, to_current: bool,
               from_file: str | None) -> tuple[ResetScenario, ...]:
    given: tuple[tuple[str, str | int | None, bool], ...] = (
        ("to-offset", to_offset, to_offset is not None),
        ("shift-by", shift_by, shift_by is not None),
        ("to-datetime", to_datetime, to_datetime is not None),
        ("by-duration", by_duration, by_duration is not None),
        ("to-earliest", None, to_earliest), ("to-latest", None, to_latest),
        ("to-current", None, to_current), ("from-file", from_file, from_file is not None),
    )
    return tuple(ResetScenario(name=n, value=v) for n, v, present in given if present)


def run(bootstrap_server: str | None, command_config: str | None, o: GroupOptions) -> None:
    """Check ``o``, run its action against the cluster and print what Kafka's tool prints."""
    problem = check_options(o)
    if problem is None and bootstrap_server is None:
        problem = 'Missing required argument "[bootstrap-server]"'
    if problem is not None:
        fail(problem)
    if "delete-offsets" in o.actions and len(o.groups) > 1:
        fail("Found multiple arguments for option group, but you asked for only one")
    if o.actions == ("reset-offsets",) and not o.dry_run and not o.execute:
        click.echo(_NO_EXECUTE, err=True)
    if o.scenarios and o.scenarios[0].name == "from-file":
        path = Path(str(o.scenarios[0].value))
        try:
            o = attrs.evolve(o, scenarios=(ResetScenario(name="from-file",
                                                         value=path.read_text()),))
        except OSError as exc:
            click.echo(f"\nError: Executing consumer group command failed due to {exc}")
            raise click.exceptions.Exit(1) from None
    missing = 'Missing required argument "[bootstrap-server]"'
    config = admin_config(server=bootstrap_server, controller=None, both=missing,
                          neither=missing, command_config=command_config)
    action = _RUN[o.actions[0]]
    try:
        output = run_admin(config, lambda admin: action(admin, o))
    except UsageError as exc:
        fail(str(exc))
    except (KafkaError, OSError) as exc:
        click.echo(f"\nError: Executing consumer group command failed due to {exc}")
        raise click.exceptions.Exit(1) from None
    for text in output.err:
        click.echo(text, nl=False, err=True)
    for text in output.out:
        click.echo(text, nl=False)
    if output.failed:
        raise click.exceptions.Exit(1)


def _action(name: str, text: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(f"--{name}", f"action_{name.replace('-', '_')}", is_flag=True, help=text)


@click.command(name="consumer-groups", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="REQUIRED: The server(s) to connect to.")
@click.option("--command-config", help="Property file containing configs to be passed to Admin Client.")
@click.option("--timeout", "timeout_ms", type=int, default=5000, show_default=True,
              help="The timeout (ms) of each call to the cluster.")
@_action("list", "List all consumer groups.")
@_action("describe", "Describe consumer group and list offset lag related to given group.")
@_action("delete", "Delete groups (their offsets and ownership information).")
@_action("reset-offsets", "Reset offsets of consumer group (inactive groups only).")
@_action("delete-offsets", "Delete offsets of consumer group (one group, several topics).")
@click.option("--group", "groups", multiple=True, help="The consumer group we wish to act on.")
@click.option("--all-groups", is_flag=True, help="Apply to all consumer groups.")
@click.option("--topic", "topics", multiple=True,
              help="A topic, or topic:0,1,2 (reset-offsets, delete-offsets).")
@click.option("--all-topics", is_flag=True, help="All topics of the group (reset-offsets).")
@click.option("--members", is_flag=True, help="Describe members of the group.")
@click.option("--verbose", is_flag=True, help="With --members: each member's partitions.")
@click.option("--offsets", is_flag=True, help="Describe offsets and lag (the default).")
@click.option("--state", is_flag=False, flag_value="", default=None,
              help="With --describe: the group's state; with --list: states to list (a,b).")
@click.option("--type", "group_type", is_flag=False, flag_value="", default=None,
              help="With --list: the group types, or types to list (classic,consumer).")
@click.option("--dry-run", is_flag=True, help="Only show the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Reset the offsets.")
@click.option("--export", is_flag=True, help="Print the new offsets as CSV.")
@click.option("--to-offset", type=int, help="Reset offsets to a specific offset.")
@click.option("--shift-by", type=int, help="Shift the current offsets by n (may be negative).")
@click.option("--to-datetime", help="Reset to the offset of a time: YYYY-MM-DDTHH:mm:SS.sss.")
@click.option("--by-duration", help="Reset to the offset of now minus a duration: PnDTnHnMnS.")
@click.option("--to-earliest", is_flag=True, help="Reset offsets to earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset offsets to latest offset.")
@click.option("--to-current", is_flag=True, help="Reset offsets to current offset.")
@click.option("--from-file", help="Reset offsets to values defined in a CSV file.")
def consumer_groups(
    bootstrap_server: str | None, command_config: str | None, timeout_ms: int,
    action_list: bool, action_describe: bool, action_delete: bool, action_reset_offsets: bool,
    action_delete_offsets: bool, groups: tuple[str, ...], all_groups: bool,
    topics: tuple[str, ...], all_topics: bool, members: bool, verbose: bool, offsets: bool,
    state: str | None, group_type: str | None, dry_run: bool, execute: bool, export: bool,
    to_offset: int | None, shift_by: int | None, to_datetime: str | None,
    by_duration: str | None, to_earliest: bool, to_latest: bool, to_current: bool,
    from_file: str | None,
) -> None:
    """List, describe or delete consumer groups, reset or delete their offsets
    (kafka-consumer-groups.sh)."""
    flags = (action_list, action_describe, action_delete, action_reset_offsets,
             action_delete_offsets)
    options = GroupOptions(
        actions=tuple(a for a, given in zip(ACTIONS, flags, strict=True) if given),
        groups=groups, all_groups=all_groups, topics=topics, all_topics=all_topics,
        members=members, verbose=verbose, offsets=offsets, state=state, group_type=group_type,
        dry_run=dry_run, execute=execute, export=export, timeout_ms=timeout_ms,
        scenarios=_scenarios(to_offset, shift_by, to_datetime, by_duration, to_earliest,
                             to_latest, to_current, from_file),
    )
    run(bootstrap_server, command_config, options)
