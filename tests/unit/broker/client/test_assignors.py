"""range, roundrobin and cooperative-sticky: Kafka's documented examples, then properties."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.client.assignors import RangeAssignor, RoundRobinAssignor
from broker.client.consumer_protocol import Subscription, generation_user_data
from broker.client.sticky_assignor import CooperativeStickyAssignor, balanced_sticky
from broker.client.types import TopicPartition


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def sub(*topics: str, owned: tuple[TopicPartition, ...] = (), generation: int = -1,
        instance: str | None = None) -> Subscription:
    return Subscription(topics=topics, owned_partitions=owned, generation_id=generation,
                        group_instance_id=instance)


def test_range_cuts_each_topic_into_ranges_the_first_members_getting_the_extra() -> None:
    # RangeAssignor's javadoc: C0, C1; t0 and t1 with 3 partitions each
    result = RangeAssignor().assign({"t0": 3, "t1": 3}, {"C0": sub("t0", "t1"),
                                                         "C1": sub("t0", "t1")})
    assert result == {"C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
                      "C1": [tp("t0", 2), tp("t1", 2)]}


def test_roundrobin_deals_partitions_to_the_members_subscribed_to_their_topic() -> None:
    # RoundRobinAssignor's javadoc: C0 [t0]; C1 [t0, t1]; C2 [t0, t1, t2]; ti with i+1 partitions
    subscriptions = {"C0": sub("t0"), "C1": sub("t0", "t1"), "C2": sub("t0", "t1", "t2")}
    result = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {"C0": [tp("t0", 0)], "C1": [tp("t1", 0)],
                      "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


def test_static_members_come_first_ordered_by_instance_id() -> None:
    subscriptions = {"m-zzz": sub("t", instance="a"), "m-aaa": sub("t")}
    assert RangeAssignor().assign({"t": 3}, subscriptions) == {
        "m-zzz": [tp("t", 0), tp("t", 1)], "m-aaa": [tp("t", 2)]}


def test_sticky_keeps_owned_partitions_and_moves_only_what_balance_needs() -> None:
    owned_a = (tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 3))
    subscriptions = {"a": sub("t", owned=owned_a, generation=4), "b": sub("t")}
    target = balanced_sticky({"t": 4}, subscriptions)
    assert len(target["a"]) == len(target["b"]) == 2
    assert set(target["a"]) < set(owned_a)
    # cooperative: b's two are still a's, so this round they go to nobody
    result = CooperativeStickyAssignor().assign({"t": 4}, subscriptions)
    assert result == {"a": target["a"], "b": []}
    # next round a owns only its two; b gets them now
    again = {"a": sub("t", owned=tuple(target["a"]), generation=5), "b": sub("t", generation=5)}
    assert CooperativeStickyAssignor().assign({"t": 4}, again) == target


def test_sticky_settles_claims_by_generation() -> None:
    older = sub("t", owned=(tp("t", 0),), generation=2)
    newer = sub("t", owned=(tp("t", 0),), generation=3)
    assert balanced_sticky({"t": 1}, {"old": older, "new": newer})["new"] == [tp("t", 0)]
    # a tie: neither keeps it, and the generation can come from the user data (v0/v1)
    tie = Subscription(topics=("t",), owned_partitions=(tp("t", 0),),
                       user_data=generation_user_data(3))
    assert balanced_sticky({"t": 1}, {"x": tie, "y": newer}) == {"x": [tp("t", 0)], "y": []}


members = st.lists(st.sampled_from("abcde"), min_size=1, max_size=5, unique=True)
topic_counts = st.dictionaries(st.sampled_from(["t0", "t1", "t2"]), st.integers(0, 7),
                               min_size=1)


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Subscription]]:
    counts = draw(topic_counts)
    names = draw(members)
    all_partitions = [tp(t, p) for t, n in counts.items() for p in range(n)]
    subscriptions = {}
    for name in names:
        wanted = draw(st.lists(st.sampled_from(sorted(counts)), min_size=1, unique=True))
        owned = draw(st.lists(st.sampled_from(all_partitions), unique=True)) \
            if all_partitions else []
        subscriptions[name] = sub(*wanted, owned=tuple(owned), generation=draw(st.integers(0, 3)))
    return counts, subscriptions


def _holders(result: Mapping[str, list[TopicPartition]]) -> dict[TopicPartition, list[str]]:
    holders: dict[TopicPartition, list[str]] = {}
    for member, tps in result.items():
        for one in tps:
            holders.setdefault(one, []).append(member)
    return holders


@settings(max_examples=200, deadline=None)
@given(groups())
def test_sticky_is_valid_and_balanced_for_any_group(
    group: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    counts, subscriptions = group
    target = balanced_sticky(counts, subscriptions)
    holders = _holders(target)
    wanted = {tp(t, p) for t, n in counts.items() for p in range(n)
              if any(t in s.topics for s in subscriptions.values())}
    assert set(holders) == wanted
    assert all(len(h) == 1 for h in holders.values())
    for one, (member,) in holders.items():
        assert one.topic in subscriptions[member].topics
        # balanced: no eligible member has two fewer than the holder
        for other, s in subscriptions.items():
            if one.topic in s.topics:
                assert len(target[member]) - len(target[other]) < 2
    # cooperative: nothing goes to a new member while another member still claims it
    result = CooperativeStickyAssignor().assign(counts, subscriptions)
    for member, tps in result.items():
        for one in tps:
            assert one in target[member]
            claimed_elsewhere = any(one in s.owned_partitions and m != member
                                    and one not in target[m] for m, s in subscriptions.items())
            assert not (claimed_elsewhere and one not in subscriptions[member].owned_partitions)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6,
                                    unique=True))
def test_with_equal_subscriptions_counts_differ_by_at_most_one(count: int, names: list[str]) -> None:
    for assignor in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor()):
        result = assignor.assign({"t": count}, {n: sub("t") for n in names})
        sizes = [len(v) for v in result.values()]
        assert max(sizes) - min(sizes) <= 1, assignor.name
        assert sorted(p for v in result.values() for p in v) == [tp("t", p) for p in range(count)]
