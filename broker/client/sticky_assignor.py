"""The ``cooperative-sticky`` assignor (pure): balanced, sticky, and incremental.

Kafka's ``CooperativeStickyAssignor`` (apache/kafka
``CooperativeStickyAssignor.java`` over ``AbstractStickyAssignor.java``)
promises three things, which this one keeps with an algorithm of its own:

1. **valid**: a member gets only partitions of topics it subscribes to,
   each partition goes to exactly one member;
2. **balanced**: no partition can move to a member it is eligible for that
   has at least two fewer partitions than its holder (with equal
   subscriptions: counts differ by at most one);
3. **sticky**: a partition stays with the member that owned it unless
   balance needs it elsewhere.

Owned partitions come from each member's subscription (ConsumerProtocol
v1+) with its generation (v2+, else the INT32 user data). As Kafka does, a
partition claimed by two members of the same generation is treated as
owned by neither, and of two claims from different generations the newer
wins; claims of topics a member no longer subscribes to are dropped.

The steps: every valid claim is kept; the unowned partitions, those with
the fewest eligible members first, each go to the least loaded eligible
member; then, while some partition can move to an eligible member with at
least two fewer partitions than its holder, it moves (partitions that were
not owned by their holder move first). Kafka's general-case builder finds
the same kind of balanced, sticky answer, not always the same one.

**Cooperative** (KIP-429): a partition that changes owner is first only
taken away: this round's assignment withholds it from its new member, the
old owner revokes it and rejoins, and the next round gives it out (Kafka's
``computePartitionsTransferringOwnership`` + ``adjustAssignment``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from broker.client.assignors import RebalanceProtocol, member_order
from broker.client.consumer_protocol import (
    Subscription,
    generation_user_data,
    read_generation_user_data,
)
from broker.client.types import TopicPartition

__all__ = ["CooperativeStickyAssignor"]

_NO_GENERATION: Final = -1
Assignments = dict[str, list[TopicPartition]]


def _generation(subscription: Subscription) -> int:
    if subscription.generation_id >= 0:
        return subscription.generation_id
    from_user_data = read_generation_user_data(subscription.user_data)
    return _NO_GENERATION if from_user_data is None else from_user_data


def _valid_claims(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> dict[TopicPartition, str]:
    """Each partition's previous owner, conflicts settled by generation."""
    owner: dict[TopicPartition, tuple[str, int]] = {}
    disputed: set[TopicPartition] = set()
    for member, subscription in subscriptions.items():
        generation = _generation(subscription)
        for tp in subscription.owned_partitions:
            if tp.topic not in subscription.topics:
                continue
            if not 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                continue
            other = owner.get(tp)
            if other is None or generation > other[1]:
                owner[tp] = (member, generation)
            elif generation == other[1]:
                disputed.add(tp)
    return {tp: member for tp, (member, _) in owner.items() if tp not in disputed}


class CooperativeStickyAssignor:
    name = "cooperative-sticky"
    protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def user_data(self, generation: int) -> bytes | None:
        return generation_user_data(generation)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignments:
        target = balanced_sticky(partitions_per_topic, subscriptions)
        return _withhold_transfers(target, subscriptions)


def balanced_sticky(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Assignments:
    """The assignment the group should reach (before cooperative withholding)."""
    members = sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))
    rank = {member: index for index, member in enumerate(members)}
    eligible: dict[TopicPartition, list[str]] = {}
    for topic in sorted(partitions_per_topic):
        wanting = [m for m in members if topic in subscriptions[m].topics]
        if wanting:
            for partition in range(partitions_per_topic[topic]):
                eligible[TopicPartition(topic, partition)] = wanting
    claims = _valid_claims(partitions_per_topic, subscriptions)
    holder: dict[TopicPartition, str] = {tp: claims[tp] for tp in eligible if tp in claims}
    load = {member: 0 for member in members}
    for member in holder.values():
        load[member] += 1
    unowned = sorted((tp for tp in eligible if tp not in holder),
                     key=lambda tp: (len(eligible[tp]), tp))
    for tp in unowned:
        member = min(eligible[tp], key=lambda m: (load[m], rank[m]))
        holder[tp] = member
        load[member] += 1
    _balance(eligible, holder, load, claims, rank)
    out: Assignments = {member: [] for member in members}
    for tp in sorted(holder):
        out[holder[tp]].append(tp)
    return out


def _balance(
    eligible: Mapping[TopicPartition, list[str]],
    holder: dict[TopicPartition, str],
    load: dict[str, int],
    claims: Mapping[TopicPartition, str],
    rank: Mapping[str, int],
) -> None:
    """Move partitions to eligible members two or more below their holder, until none can.

    Each move lowers the sum of squared loads, so the loop ends; the bound is a guard.
    """
    # partitions not owned by their holder go first: moving them costs no stickiness
    order = sorted(holder, key=lambda tp: (claims.get(tp) == holder[tp], tp))
    for _ in range(len(holder) * max(1, len(load)) + 1):
        move = None
        for tp in order:
            current = holder[tp]
            target = min(eligible[tp], key=lambda m: (load[m], rank[m]))
            if load[current] - load[target] >= 2:
                move = (tp, current, target)
                break
        if move is None:
            return
        tp, current, target = move
        holder[tp] = target
        load[current] -= 1
        load[target] += 1


def _withhold_transfers(
    target: Assignments, subscriptions: Mapping[str, Subscription]
) -> Assignments:
    """Partitions moving to a new member while another still owns them wait a round."""
    revoked: set[TopicPartition] = set()
    added: dict[TopicPartition, str] = {}
    for member, tps in target.items():
        owned = set(subscriptions[member].owned_partitions)
        assigned = set(tps)
        added.update((tp, member) for tp in tps if tp not in owned)
        revoked.update(tp for tp in owned if tp not in assigned)
    transferring = {tp: member for tp, member in added.items() if tp in revoked}
    return {
        member: [tp for tp in tps if transferring.get(tp) != member]
        for member, tps in target.items()
    }
