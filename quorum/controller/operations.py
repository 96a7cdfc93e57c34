"""Controller commands in bounded slices, and the transactions that frame large ones.

A command (a request, or a timer such as session expiry) is a generator of
``Slice``s that returns the response (Kafka's ControllerResult, spread over
several steps). Each slice is a bounded amount of work
(``MAX_UNITS_PER_SLICE`` records generated or partitions examined); the task
that owns the Raft core runs one slice per step and serves timers, fetches
and heartbeats in between. A slice carries the records to append now (maybe
none: a scan that found nothing yet) and whether records may follow in a
later slice.

``Operation`` runs one such generator and frames its records (KIP-868): an
operation whose records all come in one slice appends them as one proposal,
which the Raft core keeps in one batch (atomic as it is); one whose records
span several slices appends ``BeginTransactionRecord`` before the first and
``EndTransactionRecord`` after the last, so that every reader publishes all
of them or none (``quorum.node.metadata_follower``). A leader change in the
middle leaves the transaction open in the log; the next active controller
aborts it first thing (``AbortTransactionRecord``). Kafka refuses such
requests instead (POLICY_VIOLATION above 10,000 records); here a CreateTopics
of 100,000 partitions simply takes about a hundred slices.

Operations run one at a time, so a generator may compute its records from
the image it started on: nothing else changes the image before it ends (or
before its next boundary, below) but its own records.

An operation whose records are independent per partition (fencing a broker,
the elections after a broker returns, a new incarnation's ISR removals, the
preferred-leader rebalance: Kafka writes such controller-generated results in
batches without a transaction) may be split into *parts*: it yields a
``BOUNDARY`` slice after the records of a part (no transaction is open then),
and its owner may run other operations before it steps it again. A part is
computed from the working image at its own start (``ControllerContext.
working_image``), never from what an earlier part saw. Client requests
(CreateTopics, DeleteTopics, CreatePartitions, ...) have no boundary: they
stay atomic.

A command that examines its request item by item (DeleteTopics, AlterPartition,
the config commands) counts its work with a ``SliceBudget``: it pauses (a slice
without records) whenever the next item would not fit in the slice, and writes
what it found at the end, the first records in the slice of the last items, so
a small request is one slice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Final, Generic, ParamSpec, TypeVar

import attrs

from quorum.controller.results import ControllerResult
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.wire.messages.metadata_records import BeginTransactionRecord, EndTransactionRecord
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "BOUNDARY",
    "RECORDS_PER_SLICE",
    "Operation",
    "Slice",
    "SliceBudget",
    "Steps",
    "at_once",
    "emit_in_slices",
    "from_result",
    "run_to_end",
    "scan_in_slices",
]

R = TypeVar("R")
T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")

# records per slice: with a transaction marker or two it still fits one Raft batch
# (RaftConfig.max_batch_records, the slice bound), so a reader replays it in one slice
RECORDS_PER_SLICE: Final = MAX_UNITS_PER_SLICE - 2


@attrs.frozen
class Slice:
    """One bounded step's output: records to append now, and whether more may follow."""

    records: Sequence[MetadataRecord] = ()
    # False: no record follows in a later slice (the generator may still return after)
    more: bool = False
    # work done: records generated or partitions examined (None: len(records))
    units: int | None = None
    # the records so far are a complete part: others may run before the next step
    boundary: bool = False

    @property
    def work_units(self) -> int:
        return len(self.records) if self.units is None else self.units


Steps = Generator[Slice, None, R]

# where an operation split into parts lets others run (see the module docstring)
BOUNDARY: Final = Slice(boundary=True)


def from_result(compute: Callable[[], ControllerResult[R]]) -> Steps[R]:
    """A command computed in one go (bounded by its request), its records in slices."""
    result = compute()
    yield from emit_in_slices(result.records)
    return result.response


def emit_in_slices(
    records: Sequence[MetadataRecord], *, more_after: bool = False,
    limit: int = RECORDS_PER_SLICE,
) -> Generator[Slice, None, None]:
    """``records`` in slices of at most ``limit``; the last says whether more follow."""
    for start in range(0, len(records), limit):
        end = start + limit
        yield Slice(records[start:end], more=end < len(records) or more_after)


def scan_in_slices(
    items: Iterable[T],
    examine: Callable[[T], U | None],
    *,
    limit: int = MAX_UNITS_PER_SLICE,
) -> Generator[Slice, None, list[U]]:
    """Examine ``items`` ``limit`` per slice (slices without records); return what was found.

    A scan decides nothing until it has seen everything, so the records it
    finds go out afterwards (``emit_in_slices``), framed as one transaction
    when there are more than a slice's worth. A read (ListPartitionReassignments)
    scans the same way and answers with what it found.
    """
    found: list[U] = []
    budget = SliceBudget(limit)
    for item in items:
        yield from budget.take()
        value = examine(item)
        if value is not None:
            found.append(value)
    if budget.units:
        yield budget.pause()
    return found


class SliceBudget:
    """The units of work done since the last slice, by a command that pauses as it goes."""

    def __init__(self, limit: int = MAX_UNITS_PER_SLICE) -> None:
        self.limit = limit
        self.units = 0  # invariant: units <= limit

    def take(self, units: int = 1) -> Generator[Slice, None, None]:
        """Count ``units`` of work about to be done; a pause first if they do not fit."""
        assert units <= self.limit, f"{units} units never fit in a slice of {self.limit}"
        if self.units + units > self.limit:
            yield self.pause()
        self.units += units

    def pause(self) -> Slice:
        """A slice without records for the work counted since the last one."""
        piece = Slice(more=True, units=self.units)
        self.units = 0
        return piece

    def emit(self, records: Sequence[MetadataRecord]) -> Generator[Slice, None, None]:
        """``records`` in slices (each record a unit); the first also carries the work
        counted so far, so a small command is one slice. Nothing follows the last."""
        start = 0
        while start < len(records) or self.units:
            room = min(RECORDS_PER_SLICE, self.limit - self.units)
            end = start + room
            chunk = records[start:end]
            piece = Slice(chunk, more=end < len(records), units=self.units + len(chunk))
            self.units = 0
            start = end
            yield piece


class Operation(Generic[R]):
    """One command's generator, stepped by its owner; frames multi-slice records.

    ``step()`` runs one slice and returns the records to propose now
    (transaction markers included); ``done`` and ``response`` tell when the
    generator has returned; ``at_boundary`` that the slice just run was a
    ``BOUNDARY`` (others may run before the next step). ``in_transaction`` is
    True between the begin and the end marker: if the operation is dropped
    then (leadership lost), the transaction stays open in the log until the
    next leader aborts it.
    """

    def __init__(self, name: str, steps: Steps[R], *, maintenance: bool = False) -> None:
        self.name = name
        # work that may wait until nothing else does (a rebalance), not a request's or a
        # broker's departure's
        self.maintenance = maintenance
        self._steps = steps
        self.done = False
        self.response: R | None = None
        self.in_transaction = False
        self.last_units = 0
        self.records_written = 0  # markers included
        self.at_boundary = False

    def step(self) -> list[MetadataRecord]:
        assert not self.done, f"{self.name} already ended"
        try:
            piece = next(self._steps)
        except StopIteration as stop:
            self.at_boundary = False
            return self._end(stop.value)
        self.last_units = piece.work_units
        self.at_boundary = piece.boundary
        if piece.boundary:
            # invariant: nobody else writes inside this operation's transaction
            assert not self.in_transaction and not piece.records, (
                f"{self.name}: a boundary inside its own transaction"
            )
            return []
        out = self._frame(piece)
        self.records_written += len(out)
        # the generator ends at the next step, after these records are appended, so
        # what it does last (an answer naming an offset) can see where they landed
        return out

    def _frame(self, piece: Slice) -> list[MetadataRecord]:
        records = list(piece.records)
        if not records:
            return records
        # more than one Raft batch's worth is a transaction too, even in one slice
        if not self.in_transaction and (piece.more or len(records) > RECORDS_PER_SLICE):
            self.in_transaction = True
            records.insert(0, BeginTransactionRecord(name=self.name))
        if self.in_transaction and not piece.more:
            self.in_transaction = False
            records.append(EndTransactionRecord())
        return records

    def _end(self, response: R) -> list[MetadataRecord]:
        self.done = True
        self.response = response
        self.last_units = 0
        if self.in_transaction:  # said more would follow, then found none
            self.in_transaction = False
            self.records_written += 1
            return [EndTransactionRecord()]
        return []


def at_once(name: str, steps: Callable[P, Steps[R]]) -> Callable[P, ControllerResult[R]]:
    """A sliced command as a function run to the end at once (tests, tools, small images)."""

    @functools.wraps(steps)
    def run(*args: P.args, **kwargs: P.kwargs) -> ControllerResult[R]:
        return run_to_end(Operation(name, steps(*args, **kwargs)))

    return run


def run_to_end(operation: Operation[R]) -> ControllerResult[R]:
    """Every slice at once (tests, tools): the records with their markers, and the response."""
    records: list[MetadataRecord] = []
    while not operation.done:
        records += operation.step()
    return ControllerResult(tuple(records), operation.response)  # type: ignore[arg-type]
