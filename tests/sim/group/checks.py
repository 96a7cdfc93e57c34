"""Invariants of the group simulation, checked after every event.

* every request is answered at most once, at an encodable layout for its version;
* one generation has one leader, and every member answered into a generation
  is among the members its leader was shown (per coordinator instance: a
  generation that completed its join phase but whose assignment was never
  written is unknown to the next instance, which may reuse its number, as
  Kafka's may);
* a successful SyncGroup carries the assignment its leader made for that
  member in that same generation;
* the coordinator's committed offsets are exactly a fold of the committed
  log (no commit visible before it is committed, none lost after);
* an answered commit is never lost: the offset of its partition comes from
  it or from a commit after it in the log, on every coordinator instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from broker.group.records import OffsetCommitReplay, decode_offsets_record
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors

if TYPE_CHECKING:
    from .world import Client, World

OffsetKey = tuple[str, str, int]


class SimFailure(AssertionError):
    """An invariant broke; the message says which and where."""


@attrs.define
class Checks:
    checked: int = 0
    answers: int = 0
    commits_answered: int = 0
    syncs_answered: int = 0
    generations: int = 0
    current_token: int | None = None
    requests: dict[int, tuple[str, Any, int, str, int]] = attrs.field(factory=dict)
    commit_spans: dict[int, tuple[int, int]] = attrs.field(factory=dict)  # token -> log span
    # (coordinator instance, generation) -> leader; -> the members its leader saw
    leaders: dict[tuple[int, int], str] = attrs.field(factory=dict)
    members_of: dict[tuple[int, int], frozenset[str]] = attrs.field(factory=dict)
    identities: dict[str, str] = attrs.field(factory=dict)  # member id -> instance id or itself
    fold: dict[OffsetKey, tuple[int, int]] = attrs.field(factory=dict)  # key -> (log index, offset)
    folded_upto: int = 0
    answered: dict[OffsetKey, int] = attrs.field(factory=dict)  # key -> log index of the last answer

    def fail(self, what: str) -> None:
        raise SimFailure(what)

    def on_request(
        self, token: int, kind: str, request: Any, version: int, client: Client, incarnation: int
    ) -> None:
        self.current_token = token
        self.requests[token] = (kind, request, version, client.instance_id or "", incarnation)

    def on_append(self, append_id: int, start: int, end: int) -> None:
        token = self.current_token
        if token is not None and self.requests[token][0] == "commit":
            self.commit_spans[token] = (start, end)

    def on_answer(self, token: int, response: Any) -> None:
        kind, request, version, instance_id, incarnation = self.requests.pop(token)
        encode(response, version)  # raises if the answer does not fit its version
        self.answers += 1
        if kind == "join":
            self._check_join(incarnation, response, instance_id)
        else:
            getattr(self, f"_check_{kind}")(token, request, response, instance_id)

    def _check_join(self, incarnation: int, r: Any, instance_id: str) -> None:
        if r.error_code != Errors.NONE:
            return
        generation = (incarnation, r.generation_id)
        self.identities[r.member_id] = instance_id or r.member_id
        for m in r.members:
            self.identities[m.member_id] = m.group_instance_id or m.member_id
        # a static leader replaced in place keeps its instance id: compare identities
        first = self.leaders.setdefault(generation, r.leader)
        if self.identities.get(first, first) != self.identities.get(r.leader, r.leader):
            self.fail(f"generation {generation} has two leaders: {first} and {r.leader}")
        # members by identity: a static member replaced in place keeps its instance id
        me = self.identities[r.member_id]
        if r.members:
            seen = frozenset(self.identities[m.member_id] for m in r.members)
            if generation in self.members_of and self.members_of[generation] != seen:
                self.fail(f"generation {generation} was shown two member lists")
            if generation not in self.members_of:
                self.generations += 1
            self.members_of[generation] = seen
        known = self.members_of.get(generation)
        if known is not None and me not in known:
            self.fail(f"{r.member_id} joined generation {generation} whose leader saw {sorted(known)}")

    def _check_sync(self, token: int, request: Any, r: Any, instance_id: str) -> None:
        if r.error_code != Errors.NONE:
            return
        self.syncs_answered += 1
        expected = f"{request.generation_id}:{instance_id or request.member_id}".encode()
        if bytes(r.assignment) != expected:
            self.fail(
                f"member {request.member_id} of generation {request.generation_id} got "
                f"{bytes(r.assignment)!r}, not its leader's {expected!r}"
            )

    def _check_heartbeat(self, token: int, request: Any, r: Any, instance_id: str) -> None:
        return

    def _check_commit(self, token: int, request: Any, r: Any, instance_id: str) -> None:
        span = self.commit_spans.pop(token, None)
        if r.topics[0].partitions[0].error_code != Errors.NONE:
            return
        if span is None:
            raise SimFailure(f"commit {token} was answered NONE without an append")
        self.commits_answered += 1
        partition = request.topics[0].partitions[0].partition_index
        key = (request.group_id, request.topics[0].name, partition)
        self.answered[key] = max(self.answered.get(key, -1), span[0])

    def after_event(self, world: World) -> None:
        self.checked += 1
        self._fold(world)
        if world.coordinator is None or not world.loaded:
            return
        for group_id in {k[0] for k in self.fold} | {k[0] for k in self.answered}:
            seen = {
                (group_id, t, p): c.offset
                for (t, p), c in world.coordinator.committed_offsets(group_id).items()
            }
            wanted = {k: v for k, (_, v) in self.fold.items() if k[0] == group_id}
            if seen != wanted:
                self.fail(f"offsets of {group_id} are {seen}, the committed log says {wanted}")
        for key, index in self.answered.items():
            at = self.fold.get(key)
            if at is None or at[0] < index:
                self.fail(f"the answered commit of {key} at log index {index} is lost: {at}")

    def after_load(self, world: World) -> None:
        self.after_event(world)

    def _fold(self, world: World) -> None:
        """Fold the committed log prefix (it only grows: cuts touch uncommitted entries)."""
        for index in range(self.folded_upto, world.committed):
            key, value, _ = world.log[index]
            replay = decode_offsets_record(key, value)
            if isinstance(replay, OffsetCommitReplay):
                okey = (replay.group_id, replay.topic, replay.partition)
                if replay.offset is None:
                    self.fold.pop(okey, None)
                else:
                    self.fold[okey] = (index, replay.offset.offset)
        self.folded_upto = max(self.folded_upto, world.committed)
