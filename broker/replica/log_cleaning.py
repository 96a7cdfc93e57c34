"""The broker's log cleaner task: compacted partitions cleaned off the hot path.

Kafka runs its cleaner in threads of their own; here one trio task in the
replica driver's nursery (beside retention) does it, and never holds the trio
thread for long: it judges the hosted partitions a slice at a time, picks the
filthiest due log (``quorum.log.cleaner_plan.choose_log``), and runs its
``CleaningJob`` slice by slice with a checkpoint between slices; fsyncs of
cleaned segments and the checkpoint file are written in worker threads.  When
no log is due it sleeps ``log.cleaner.backoff.ms`` (Kafka's default 15 s).

Only logs that are open (``FileLog.is_loaded``) are judged: a partition's log is
opened at its first use, and opening one here would run its recovery in the
trio thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

import attrs
import trio

from quorum.log import (
    CleanerConfig,
    CleaningCandidate,
    FileLog,
    LogCleaner,
    LogError,
    ReplicatedLog,
    SyncFile,
    choose_log,
    cleaner_config_of,
)
from quorum.wire.errors import WireError

__all__ = ["CleanedPartition", "LogCleaning", "clean_filthiest", "run_log_cleaner"]

logger = logging.getLogger(__name__)


class CleanedPartition(Protocol):
    """What the task reads of a hosted partition (``broker.replica.partition.Partition``)."""

    @property
    def has_log(self) -> bool: ...

    @property
    def log(self) -> ReplicatedLog: ...

    @property
    def high_watermark(self) -> int: ...


def _from_log_config(log: FileLog) -> CleanerConfig | None:
    return cleaner_config_of(log.config)


@attrs.frozen(kw_only=True)
class LogCleaning:
    cleaner: LogCleaner = attrs.field(factory=LogCleaner)
    # log.cleaner.backoff.ms: the sleep when no log needs cleaning
    backoff_ms: int = 15_000
    # a log's cleaner settings; None: not compacted
    config_of: Callable[[FileLog], CleanerConfig | None] = _from_log_config
    # partitions judged between two checkpoints
    judge_slice: int = 250


_Chosen = tuple[CleanedPartition, FileLog, CleanerConfig]


async def _candidates(
    cleaning: LogCleaning, partitions: list[CleanedPartition], clock_ms: Callable[[], int]
) -> list[tuple[_Chosen, CleaningCandidate, CleanerConfig]]:
    found: list[tuple[_Chosen, CleaningCandidate, CleanerConfig]] = []
    for start in range(0, len(partitions), cleaning.judge_slice):
        now = clock_ms()
        for partition in partitions[start : start + cleaning.judge_slice]:
            log = partition.log
            if not isinstance(log, FileLog) or not log.is_loaded or log.is_closed:
                continue
            if cleaning.cleaner.is_uncleanable(log):
                continue
            config = cleaning.config_of(log)
            if config is None:
                continue
            candidate = cleaning.cleaner.judge(
                log, high_watermark=partition.high_watermark, now_ms=now, config=config
            )
            found.append(((partition, log, config), candidate, config))
        await trio.lowlevel.checkpoint()
    return found


async def clean_filthiest(
    cleaning: LogCleaning,
    partitions: Iterable[CleanedPartition],
    clock_ms: Callable[[], int],
) -> bool:
    """One round on the filthiest due log; False if none was due (or nothing was cleaned)."""
    listed = [p for p in partitions if p.has_log]
    chosen = choose_log(await _candidates(cleaning, listed, clock_ms))
    if chosen is None:
        return False
    (partition, log, config), _ = chosen
    if log.is_closed or partition.log is not log:
        return False  # gone while the others were judged
    now = clock_ms()
    cleaner = cleaning.cleaner
    # judged again: the high watermark or the segments may have moved meanwhile
    candidate = cleaner.judge(log, high_watermark=partition.high_watermark, now_ms=now, config=config)
    if not candidate.is_due(config):
        return False
    job = cleaner.job(log, candidate, config=config, now_ms=now)
    try:
        for effect in job.steps():
            if isinstance(effect, SyncFile):
                await trio.to_thread.run_sync(effect.perform)
            else:
                await trio.lowlevel.checkpoint()
    except (OSError, LogError, WireError) as exc:
        if log.is_closed:
            # the partition was deleted while a file of the round was synced in a thread:
            # nothing is wrong with it (a partition hosted again under that name is clean)
            logger.info("cleaning %s stopped: the log was closed", log.directory.name)
            return False
        # Kafka's uncleanable partition: a corrupt batch or a failed write; what the round
        # swapped in before stays, and a swap it left half done is finished at next open
        logger.error(
            "cleaning %s failed; it is not cleaned again until the broker restarts: %s",
            log.directory.name,
            exc,
        )
        cleaner.mark_uncleanable(log)
        return False
    assert job.result is not None
    stats = job.result.stats
    logger.info(
        "cleaned %s up to offset %s: %d of %d records kept, %d segments replaced by %d",
        log.directory.name,
        job.result.end_offset,
        stats.records_kept,
        stats.records_read,
        stats.segments_replaced,
        stats.groups,
    )
    log_dir = cleaner.finish(log, job.result)
    if log_dir is not None:
        await trio.to_thread.run_sync(cleaner.write_checkpoint, log_dir)
    return job.result.end_offset is not None


async def run_log_cleaner(
    cleaning: LogCleaning,
    partitions: Callable[[], Iterable[CleanedPartition]],
    clock_ms: Callable[[], int],
) -> None:
    """Clean due logs one after the other; sleep ``backoff_ms`` when none is due."""
    while True:
        try:
            cleaned = await clean_filthiest(cleaning, partitions(), clock_ms)
        except OSError as exc:
            logger.error("the cleaner checkpoint was not written: %s", exc)
            cleaned = False
        if not cleaned:
            await trio.sleep(cleaning.backoff_ms / 1000)
