"""``kraft consumer-groups``: Kafka's option checks, output layouts and reset arithmetic."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from broker.client import ConsumerGroupDescription, GroupListing, MemberDescription, TopicPartition
from broker.client.group_requests import Coordinator
from cli.consumer_groups import GroupOptions, check_options, consumer_groups
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
    ResetScenario,
    UsageError,
    export_csv,
    parse_datetime_ms,
    parse_duration_ms,
    parse_topic_args,
    read_reset_plan,
)

SERVER = "127.0.0.1:1"  # nothing listens: every case below must end before connecting
T0, T1, U0 = TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("users", 0)


def member(member_id: str, *partitions: TopicPartition, instance: str | None = None
           ) -> MemberDescription:
    return MemberDescription(member_id=member_id, group_instance_id=instance, client_id="app",
                             host="/10.0.0.7", assignment=partitions)


def group(state: str, *members: MemberDescription) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(group_id="billing", state=state, protocol_type="consumer",
                                    assignor="range" if members else "", members=members,
                                    coordinator=Coordinator(2, "broker2", 9092))


# -- option checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    (GroupOptions(actions=("describe",)),
     "Option [describe] takes one of these options: [group], [all-groups]"),
    (GroupOptions(actions=("describe",), groups=("g",), members=True, state=""),
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (GroupOptions(actions=("describe",), groups=("g",), state="Stable"),
     "Option [describe] does not take a value for [state]"),
    (GroupOptions(actions=("list",), members=True),
     "Option(s) [members] are unavailable given other options on the command line"),
    (GroupOptions(actions=("describe",), groups=("g",), group_type=""),
     "Option(s) [type] are unavailable given other options on the command line"),
    (GroupOptions(actions=("delete",), groups=("g",), topics=("t",)),
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (GroupOptions(actions=("delete-offsets",), groups=("g",)),
     "Option [delete-offsets] takes the following options: [group], [topic]"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",), dry_run=True, execute=True),
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",), all_topics=True, scenarios=(
        ResetScenario(name="to-offset", value=3), ResetScenario(name="to-latest"))),
     'Option "[to-offset]" can\'t be used with option "[to-latest]"'),
    (GroupOptions(actions=("reset-offsets",), groups=("g",), all_topics=True),
     "Option '[reset-offsets]' requires one of the following scenarios: [to-offset], "
     "[shift-by], [to-datetime], [by-duration], [to-earliest], [to-latest], [to-current], "
     "[from-file]"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",),
                  scenarios=(ResetScenario(name="to-earliest"),)),
     "One of the reset scopes should be defined: --all-topics, --topic."),
    (GroupOptions(actions=("describe",), groups=("g",), all_groups=True),
     'Option "[group]" can\'t be used with option "[all-groups]"'),
    (GroupOptions(actions=("describe",), groups=("g",), topics=("t",)),
     'Option "[topic]" can\'t be used with option "[describe]"'),
    (GroupOptions(actions=()), "Command must include exactly one action: --list, --describe, "
                               "--delete, --reset-offsets, --delete-offsets"),
    (GroupOptions(actions=("list", "delete"), all_groups=True),
     "Command must include exactly one action: --list, --describe, --delete, "
     "--reset-offsets, --delete-offsets"),
])
def test_kafkas_option_checks_refuse_with_kafkas_message(options: GroupOptions,
                                                         message: str) -> None:
    assert check_options(options) == message


def test_well_formed_command_lines_pass_the_checks() -> None:
    for options in (
        GroupOptions(actions=("list",), state="stable,empty", group_type=""),
        GroupOptions(actions=("describe",), all_groups=True, members=True, verbose=True),
        GroupOptions(actions=("reset-offsets",), groups=("g",), topics=("t:0,1",),
                     scenarios=(ResetScenario(name="shift-by", value=-2),), execute=True),
        GroupOptions(actions=("reset-offsets",), groups=("g",),
                     scenarios=(ResetScenario(name="from-file", value="t,0,1"),)),
        GroupOptions(actions=("delete-offsets",), groups=("g",), topics=("t",)),
    ):
        assert check_options(options) is None, options


@pytest.mark.parametrize(("args", "message"), [
    (["--list"], 'Missing required argument "[bootstrap-server]"'),
    (["--bootstrap-server", SERVER, "--describe", "--state", "--members", "--group", "g"],
     "takes at most one of these options"),
    (["--bootstrap-server", SERVER, "--list", "--state", "bogus"],
     "Invalid state list 'bogus'. Valid states are: PreparingRebalance, CompletingRebalance, "
     "Stable, Dead, Empty, Assigning, Reconciling"),
    (["--bootstrap-server", SERVER, "--delete-offsets", "--group", "a", "--group", "b",
      "--topic", "t"], "Found multiple arguments for option group, but you asked for only one"),
])
def test_the_command_refuses_on_stderr_with_status_1(args: list[str], message: str) -> None:
    result = CliRunner().invoke(consumer_groups, args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stdout == ""


# -- layouts ---------------------------------------------------------------------------------


def test_offset_rows_put_the_busiest_member_first_then_unassigned_committed_partitions() -> None:
    described = group("Stable", member("m-1", U0), member("m-2", T1, T0))
    rows = offset_rows(described, {T0: 4, T1: -1, TopicPartition("old", 0): 9}, {T0: 10, T1: 7})
    assert [(r.topic, r.partition, r.consumer_id, r.lag) for r in rows] == [
        ("orders", 0, "m-2", 6), ("orders", 1, "m-2", None), ("users", 0, "m-1", None),
        ("old", 0, "-", None),
    ]


def test_the_offsets_table_is_kafkas_printf_layout() -> None:
    output = Output()
    rows = offset_rows(group("Stable", member("consumer-1-abc", T0)), {T0: 3}, {T0: 5})
    offsets_text(output, "billing", "Stable", rows)
    assert output.out == [
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG   "
        "          CONSUMER-ID     HOST            CLIENT-ID"
        "\nbilling         orders          0          3               5               2     "
        "          consumer-1-abc  /10.0.0.7       app\n"
    ]
    assert (output.err, output.failed) == ([], False)


def test_an_empty_group_gets_kafkas_note_and_a_dead_one_an_error_without_a_table() -> None:
    empty = Output()
    offsets_text(empty, "billing", "Empty", offset_rows(group("Empty"), {T0: 1}, {}))
    assert empty.err == ["\nConsumer group 'billing' has no active members.\n"]
    assert "\nbilling         orders          0          1               -               -" \
        in empty.out[0]
    dead = Output()
    offsets_text(dead, "billing", "Dead", [])
    assert dead.out == ["\nError: Consumer group 'billing' does not exist.\n"] and dead.failed
    rebalancing = Output()
    offsets_text(rebalancing, "billing", "PreparingRebalance", [])
    assert rebalancing.err == ["\nWarning: Consumer group 'billing' is rebalancing.\n"]
    assert rebalancing.out == []


def test_members_show_the_instance_column_only_when_a_member_has_one_and_verbose_assignments(
) -> None:
    plain = Output()
    members_text(plain, group("Stable", member("m-1", T0, U0, T1)), verbose=True)
    assert plain.out == [
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     "
        "ASSIGNMENT\n"
        "billing         m-1             /10.0.0.7       app             3               "
        "orders(0,1), users(0)\n"
    ]
    static = Output()
    members_text(static, group("Stable", member("m-1", instance="i-1"), member("m-2")),
                 verbose=False)
    assert static.out[0].splitlines()[1:] == [
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       "
        "#PARTITIONS     ",
        "billing         m-1             i-1               /10.0.0.7       app             "
        "0               ",
        "billing         m-2                               /10.0.0.7       app             "
        "0               ",
    ]


def test_an_empty_groups_members_view_still_prints_the_header_as_kafkas_does() -> None:
    output = Output()
    members_text(output, group("Empty"), verbose=False)
    assert output.err == ["\nConsumer group 'billing' has no active members.\n"]
    assert output.out == ["\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       "
                          "#PARTITIONS     \n"]


def test_the_state_view_names_the_coordinator_as_host_port_and_id() -> None:
    output = Output()
    state_text(output, group("Stable", member("m-1"), member("m-2")))
    assert output.out == [
        "\nGROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE       "
        "    #MEMBERS"
        "\nbilling                   broker2:9092  (2)         range                Stable      "
        "    2\n"
    ]


def test_list_with_state_and_type_is_a_padded_table() -> None:
    listings = [GroupListing(group_id="a-rather-long-group-name", protocol_type="consumer",
                             state="Stable", group_type="classic"),
                GroupListing(group_id="g", protocol_type="consumer")]
    assert list_text(listings, with_type=True, with_state=True).splitlines() == [
        f"{'GROUP':34} {'TYPE':20} {'STATE':20}",
        f"{'a-rather-long-group-name':34} {'Classic':20} {'Stable':20}",
        f"{'g':34} {'Unknown':20} {'Unknown':20}",
    ]
    assert list_text([], with_type=False, with_state=True) == f"{'GROUP':25} {'STATE':20}\n"


def test_the_reset_plan_and_the_offset_deletion_tables() -> None:
    assert reset_plan_text({"billing": {T1: 7, T0: 0}, "audit": {}}) == (
        f"\n{'GROUP':30} {'TOPIC':30} {'PARTITION':10} {'NEW-OFFSET':15}"
        f"\n{'billing':30} {'orders':30} {'0':10} {'0':15}"
        f"\n{'billing':30} {'orders':30} {'1':10} {'7':15}\n"
    )
    assert reset_plan_text({}) == "\n"
    output = Output()
    delete_offsets_text(output, "billing", ["orders", "gone"], "GROUP_SUBSCRIBED_TO_TOPIC",
                        {T0: "GROUP_SUBSCRIBED_TO_TOPIC: x", TopicPartition("gone", -1): "no"})
    assert output.failed
    assert output.out == [
        "\nError: Encounter some partition level error, see the follow-up details:\n",
        f"\n{'TOPIC':30} {'PARTITION':15} STATUS"
        f"\n{'gone':30} {'Not Provided':15} Error: :no"
        f"\n{'orders':30} {'0':15} Error: :GROUP_SUBSCRIBED_TO_TOPIC: x\n",
    ]


def test_group_deletion_reports_success_or_each_failure() -> None:
    ok = Output()
    delete_groups_text(ok, ["a", "b"], {})
    assert ok.out == ["Deletion of requested consumer groups ('a, b') was successful.\n"]
    partly = Output()
    delete_groups_text(partly, ["a"], {"b": "NON_EMPTY_GROUP: the group is not empty"})
    assert partly.failed and partly.out == [
        "\nError: Deletion of some consumer groups failed:\n",
        "* Group 'b' could not be deleted due to: NON_EMPTY_GROUP: the group is not empty\n",
        "\nThese consumer groups were deleted successfully: 'a'\n",
    ]


# -- reset arithmetic ------------------------------------------------------------------------


def test_datetimes_parse_as_kafkas_getdatetime_with_utc_when_no_zone_is_given() -> None:
    assert parse_datetime_ms("2024-01-02T03:04:05.678") == 1704164645678
    assert parse_datetime_ms("2024-01-02T03:04:05.678Z") == 1704164645678
    assert parse_datetime_ms("2024-01-02T05:04:05.678+02:00") == 1704164645678
    assert parse_datetime_ms("2024-01-02T01:04:05.678-02") == 1704164645678
    for bad in ("2024-01-02", "2024-01-02T03:04:05", "2024-13-02T03:04:05.678"):
        with pytest.raises(UsageError):
            parse_datetime_ms(bad)


def test_durations_parse_as_javas_duration() -> None:
    assert parse_duration_ms("PT15M") == 900_000
    assert parse_duration_ms("P1DT2H") == 93_600_000
    assert parse_duration_ms("PT1.5S") == 1500
    assert parse_duration_ms("-PT1S") == -1000
    for bad in ("15M", "P", "PT", "P1H"):
        with pytest.raises(UsageError):
            parse_duration_ms(bad)


def test_topic_arguments_name_topics_or_their_partitions() -> None:
    assert parse_topic_args(["orders", "users:0,2"]) == (
        ["orders"], [U0, TopicPartition("users", 2)])
    with pytest.raises(UsageError, match="Invalid partition 'x'"):
        parse_topic_args(["users:x"])
    with pytest.raises(UsageError, match="expected topic name and partitions"):
        parse_topic_args(["a:1:2"])


def test_exported_plans_read_back_with_and_without_the_group_column() -> None:
    plan = {"billing": {T0: 3, T1: 5}}
    single = export_csv(plan, single=True)
    assert single == "orders,0,3\norders,1,5\n"
    assert read_reset_plan(single, ["billing"]) == plan
    several = export_csv({**plan, "audit": {U0: 1}}, single=False)
    assert several == "audit,users,0,1\nbilling,orders,0,3\nbilling,orders,1,5\n"
    assert read_reset_plan(several, ["billing", "audit"]) == {**plan, "audit": {U0: 1}}
    with pytest.raises(UsageError):
        read_reset_plan("orders,zero,3\n", ["billing"])


def test_an_unreachable_cluster_fails_the_command_with_kafkas_error_line() -> None:
    result = CliRunner().invoke(consumer_groups, ["--bootstrap-server", SERVER, "--list",
                                                  "--timeout", "300"])
    assert result.exit_code == 1
    assert result.stdout.startswith("\nError: Executing consumer group command failed due to ")
    assert SERVER in result.stdout
