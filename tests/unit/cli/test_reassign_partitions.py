"""``kraft reassign-partitions``: Kafka's JSON in and out, the proposal and status lines,
option errors, and the async cores against one controller and four brokers in-process."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sized
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from broker import BrokerNode
from broker.client import Admin, NewTopic
from broker.client.admin_types import PartitionReassignment
from cli.reassign_json import (
    ReassignmentError,
    generate_lines,
    list_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_to_move,
    reassignment_json,
    verify_lines,
)
from cli.reassign_partitions import (
    balance_plan,
    cancel_reassignments,
    execute_reassignment,
    image_assignment,
    ongoing_reassignments,
    propose,
    reassign_partitions,
    verify_reassignment,
)
from quorum.controller.image import MetadataImage
from quorum.controller.reassignment_plan import TopicPartition
from quorum.node import ControllerNode
from tests.unit.node.nodes import (
    controller_and_brokers,
    controller_image_until,
    wait_for_leader,
)

TP = TopicPartition


# -- JSON in and out ----------------------------------------------------------------------


def test_the_proposal_json_is_kafkas_compact_format_in_partition_order() -> None:
    text = reassignment_json({TP("b", 0): (2,), TP("a", 1): (3, 1), TP("a", 0): (1, 2)})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":1,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[2],"log_dirs":["any"]}]}'
    )


assignments = st.dictionaries(
    st.builds(TP, st.sampled_from(["a", "orders", "x.y-z"]), st.integers(0, 50)),
    st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True).map(tuple),
    min_size=1, max_size=8,
)


@settings(max_examples=100)
@given(assignments)
def test_a_written_reassignment_reads_back_as_the_same_targets(
    assignment: dict[TopicPartition, tuple[int, ...]],
) -> None:
    assert parse_reassignment_json(reassignment_json(assignment)) == assignment


def test_log_dirs_are_optional_and_the_version_defaults_to_one() -> None:
    text = '{"partitions":[{"topic":"t","partition":2,"replicas":[3,1]}]}'
    assert parse_reassignment_json(text) == {TP("t", 2): (3, 1)}


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
    ('{"version":1}', 'needs a "partitions" list'),
    ('{"partitions":[]}', 'empty "partitions" list'),
    ('{"partitions":[{"topic":"t","replicas":[1]}]}', 'partitions entry 0 has no "partition"'),
    ('{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}', "must be a partition"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,"2"]}]}', "list of broker ids"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "cannot be empty"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2,1]}]}',
     "t-0 contains multiple entries for 1"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
     '{"topic":"t","partition":0,"replicas":[2]}]}', "duplicate topic partitions: t-0"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
     "is different from size of log dirs list"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}',
     "does not support"),
])
def test_a_bad_reassignment_json_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ReassignmentError, match=message.replace("[", r"\[")):
        parse_reassignment_json(text)


def test_topics_to_move_are_read_and_duplicates_refused() -> None:
    text = '{"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}'
    assert parse_topics_to_move(text) == ("foo", "bar")
    with pytest.raises(ReassignmentError, match="duplicate entries: foo"):
        parse_topics_to_move('{"topics":[{"topic":"foo"},{"topic":"foo"}]}')
    with pytest.raises(ReassignmentError, match='topics entry 0: "topic" must be a topic name'):
        parse_topics_to_move('{"topics":[{"topic":7}]}')


@pytest.mark.parametrize(("text", "message"), [
    ("1,a", "Invalid broker list"),
    ("", "Invalid broker list"),
    ("1,-2", "Invalid broker list"),
    ("1,2,1", "duplicate entries: 1"),
])
def test_a_bad_broker_list_is_refused(text: str, message: str) -> None:
    with pytest.raises(ReassignmentError, match=message):
        parse_broker_list(text)
    assert parse_broker_list(" 3, 1 ,2") == (3, 1, 2)


# -- proposals and status lines over an image ---------------------------------------------


def image(layout: dict[str, list[list[int]]], brokers: list[int],
          racks: dict[int, str] | None = None) -> dict[str, Any]:
    """A small image in ``image_to_json`` form."""
    return {
        "brokers": [{"brokerId": b, "rack": (racks or {}).get(b), "fenced": False}
                    for b in brokers],
        "topics": [
            {"name": name, "partitions": [
                {"partition": i, "replicas": r, "addingReplicas": [], "removingReplicas": []}
                for i, r in enumerate(replicas)
            ]}
            for name, replicas in layout.items()
        ],
    }


def test_balance_after_adding_a_broker_moves_the_fewest_replicas_onto_it() -> None:
    layout = {"orders": [[1, 2], [2, 3], [3, 1], [1, 2], [2, 3], [3, 1]]}
    proposal = propose(image(layout, [1, 2, 3, 4]), None, None)
    held = Counter(b for replicas in proposal.plan.target.values() for b in replicas)
    assert held == {1: 3, 2: 3, 3: 3, 4: 3}
    assert proposal.plan.replicas_moved == proposal.plan.minimum_moves == 3
    lines = generate_lines(proposal)
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"][0] == {
        "topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"],
    }
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = parse_reassignment_json(lines[4])
    # only the partitions whose list changes are proposed, each as the plan has it
    assert proposed == {
        tp: r for tp, r in proposal.plan.target.items() if r != proposal.current[tp]
    }
    assert set(proposal.plan.moves) <= set(proposed)
    assert lines[6].startswith(f"Partitions changed: {len(proposed)} of 6; replicas moved: 3 "
                               "(the fewest a balanced plan moves: 3)")


def test_generate_moves_the_named_topics_off_brokers_left_out_of_the_list() -> None:
    layout = {"a": [[1, 2], [2, 3]], "b": [[3, 1]]}
    proposal = propose(image(layout, [1, 2, 3]), ["a"], [1, 2])
    assert set(proposal.plan.target) == {TP("a", 0), TP("a", 1)}
    assert all(set(r) == {1, 2} for r in proposal.plan.target.values())


@pytest.mark.parametrize(("topics", "brokers", "message"), [
    (["nope"], [1, 2], "Topic nope not found."),
    (["a"], [1, 9], "Unknown broker id 9"),
    (["a"], [1], "No reassignment is possible: .* 2 replicas but only 1 broker"),
])
def test_a_proposal_names_what_makes_it_impossible(
    topics: list[str], brokers: list[int], message: str
) -> None:
    with pytest.raises(ReassignmentError, match=message):
        propose(image({"a": [[1, 2]]}, [1, 2, 3]), topics, brokers)


def test_brokers_with_and_without_racks_need_disable_rack_aware() -> None:
    doc = image({"a": [[1, 2]]}, [1, 2, 3], racks={1: "r1", 2: "r2"})
    with pytest.raises(ReassignmentError, match="--disable-rack-aware"):
        propose(doc, None, None)
    assert propose(doc, None, None, rack_aware=False).plan.target[TP("a", 0)]


def test_a_partition_being_reassigned_is_not_planned_again() -> None:
    doc = image({"a": [[1, 2, 3]]}, [1, 2, 3])
    doc["topics"][0]["partitions"][0]["addingReplicas"] = [3]
    with pytest.raises(ReassignmentError, match="a-0 is being reassigned"):
        propose(doc, None, None)


def ongoing(replicas: list[int], adding: list[int], removing: list[int]) -> Any:
    return PartitionReassignment(
        replicas=tuple(replicas), adding_replicas=tuple(adding),
        removing_replicas=tuple(removing),
    )


def test_verify_reports_ongoing_completed_and_diverged_partitions() -> None:
    targets = {TP("t", 0): (1, 2), TP("t", 1): (2, 3), TP("t", 2): (3, 4), TP("u", 0): (1,)}
    current = image_assignment(image({"t": [[1, 2, 3], [2, 3], [3, 1]]}, [1, 2, 3]))
    assert verify_lines(targets, {TP("t", 0): ongoing([1, 2, 3], [], [3])}, current) == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is still in progress.",
        "Reassignment of partition t-1 is completed.",
        "There is no active reassignment of partition t-2, but replica set is 3,1 rather "
        "than 3,4.",
        "There is no active reassignment of partition u-0, but replica set is  rather than 1.",
    ]


def test_list_shows_adding_and_removing_replicas_like_kafka() -> None:
    assert list_lines({}) == ["No partition reassignments found."]
    assert list_lines({TP("t", 1): ongoing([4, 2, 1], [4], [1]), TP("t", 0): ongoing(
        [1, 2], [2], [])}) == [
        "Current partition reassignments:",
        "t-0: replicas: 1,2. adding: 2.",
        "t-1: replicas: 4,2,1. adding: 4. removing: 1.",
    ]


# -- the command's option checks (no cluster: they fail before connecting) ----------------


def run(args: list[str]) -> Any:
    return CliRunner().invoke(reassign_partitions, ["--bootstrap-controller", "localhost:1", *args])


def test_exactly_one_action_is_required() -> None:
    for args in ([], ["--generate", "--execute"]):
        result = run(args)
        assert result.exit_code == 1
        assert "Command must include exactly one action: --generate, --execute" in result.output


def test_each_action_gets_its_required_arguments_and_no_others(tmp_path: Path) -> None:
    result = run(["--generate", "--topics-to-move-json-file", "x.json"])
    assert (result.exit_code, result.output.strip()) == (
        1, 'Missing required argument "[broker-list]"'
    )
    result = run(["--execute", "--reassignment-json-file", "x.json", "--broker-list", "1"])
    assert result.exit_code == 1
    assert 'Option "[broker-list]" can\'t be used with action "[execute]"' in result.output
    result = CliRunner().invoke(reassign_partitions, ["--list"])
    assert "[bootstrap-server]" in result.output and result.exit_code == 1
    result = CliRunner().invoke(reassign_partitions, [
        "--bootstrap-server", "localhost:1", "--bootstrap-controller", "localhost:2", "--list",
    ])
    assert "Only one of --bootstrap-server or --bootstrap-controller" in result.output


def test_bad_files_and_broker_lists_fail_with_a_clear_message(tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"orders"}]}')
    result = run(["--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,x"])
    assert result.exit_code == 1 and "Invalid broker list" in result.output
    broken = tmp_path / "plan.json"
    broken.write_text('{"partitions": [')
    result = run(["--verify", "--reassignment-json-file", str(broken)])
    assert result.exit_code == 1 and "The reassignment JSON is not valid JSON" in result.output
    result = run(["--cancel", "--reassignment-json-file", str(tmp_path / "missing.json")])
    assert result.exit_code == 1 and "Cannot read" in result.output


# -- against a running cluster ------------------------------------------------------------

BROKERS = (100, 101, 102)
NEW_BROKER = 103
DEADLINE_S = 20


def all_unfenced(ids: tuple[int, ...]) -> Callable[[MetadataImage], bool]:
    def check(image: MetadataImage) -> bool:
        return all((b := image.broker(i)) is not None and not b.fenced for i in ids)

    return check


async def test_a_balance_plan_after_adding_a_broker_is_executed_verified_and_cancelled(
    tmp_path: Path,
) -> None:
    # the added broker hosts no data: its new replicas never catch up, so the reassignment
    # stays in progress until it is cancelled
    port, controller, [*brokers, added] = controller_and_brokers(
        tmp_path, (*BROKERS, NEW_BROKER), without_data=(NEW_BROKER,)
    )
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            async with trio.open_nursery() as running, Admin(
                {"bootstrap.controllers": f"127.0.0.1:{port}"}
            ) as admin:
                for broker in brokers:
                    await running.start(broker.run)
                await controller_image_until(controller, all_unfenced(BROKERS))
                await admin.create_topics(
                    [NewTopic(name="orders", num_partitions=6, replication_factor=2)]
                )
                await running.start(added.run)
                await controller_image_until(controller, all_unfenced((*BROKERS, NEW_BROKER)))
                await _balance_execute_verify_cancel(admin, port, controller, brokers[0],
                                                     tmp_path)
                for broker in (*brokers, added):
                    broker.stop()
            controller.stop()


def plural(items: Sized) -> str:
    return "" if len(items) == 1 else "s"


async def _balance_execute_verify_cancel(
    admin: Admin, port: int, controller: ControllerNode, broker: BrokerNode, tmp_path: Path
) -> None:
    proposal = await balance_plan(admin)
    plan = proposal.plan
    held = Counter(b for replicas in plan.target.values() for b in replicas)
    assert held == {b: 3 for b in (*BROKERS, NEW_BROKER)}
    assert plan.replicas_moved == plan.minimum_moves == 3
    targets = {tp: r for tp, r in plan.target.items() if r != proposal.current[tp]}
    outcome = await execute_reassignment(admin, targets)
    assert outcome.failure is None
    assert outcome.lines[-1] == (
        f"Successfully started partition reassignment{plural(targets)} for "
        + ",".join(f"orders-{tp.partition}" for tp in targets)
    )
    # the new replicas never join the ISR: the added broker fetches nothing
    ongoing_now = await ongoing_reassignments(admin)
    assert sorted(ongoing_now) == sorted(plan.moves)
    for tp, o in ongoing_now.items():
        assert o.adding_replicas == tuple(sorted(set(targets[tp]) - set(proposal.current[tp])))
        assert NEW_BROKER in o.adding_replicas
    status = (await verify_reassignment(admin, targets)).lines
    assert list(status) == [
        "Status of partition reassignment:",
        *(f"Reassignment of partition orders-{tp.partition} is "
          + ("still in progress." if tp in plan.moves else "completed.") for tp in targets),
    ]
    # what --verify through the broker reads: its image, once it holds the controller's
    offset = (await controller_image_until(controller, lambda _: True)).provenance.offset
    while broker.image.provenance.offset < offset:
        await broker.wait_changed()
    await _the_command_sees_the_same(port, broker, tmp_path, targets, status)
    with pytest.raises(ReassignmentError, match="existing partition assignment"):
        await execute_reassignment(admin, targets)
    cancelled = await cancel_reassignments(admin, targets)
    assert cancelled.lines == (
        f"Successfully cancelled partition reassignment{plural(plan.moves)} for: "
        + ",".join(f"orders-{tp.partition}" for tp in sorted(plan.moves)),
    )
    assert await ongoing_reassignments(admin) == {}


async def _the_command_sees_the_same(
    port: int, broker: BrokerNode, tmp_path: Path,
    targets: dict[TopicPartition, tuple[int, ...]], status: tuple[str, ...],
) -> None:
    """The click command end to end, through the controller and through a broker: its own
    trio.run, in a worker thread."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(reassignment_json(targets))
    assert broker.address is not None
    runner = CliRunner()
    for bootstrap in (["--bootstrap-controller", f"127.0.0.1:{port}"],
                      ["--bootstrap-server", f"{broker.address.host}:{broker.address.port}"]):
        verified = await trio.to_thread.run_sync(
            runner.invoke, reassign_partitions,
            [*bootstrap, "--verify", "--reassignment-json-file", str(plan_file)],
        )
        assert (verified.exit_code, verified.output.splitlines()) == (0, list(status)), bootstrap
        listed = await trio.to_thread.run_sync(runner.invoke, reassign_partitions,
                                               [*bootstrap, "--list"])
        assert listed.exit_code == 0
        assert listed.output.splitlines()[0] == "Current partition reassignments:"
