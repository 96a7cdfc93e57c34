"""The ``quorum-state`` file: the election state a voter must never forget.

Kafka's layout (``FileQuorumStateStore``): one JSON line in
``<metadata.log.dir>/__cluster_metadata-0/quorum-state``. pykraft writes
``data_version`` 1 (a static quorum has no directory ids, so
``votedDirectoryId`` is the zero UUID) and reads 0 and 1. A write goes to
``quorum-state.tmp``, is fsynced, renamed over the file, and the directory
is fsynced, so a crash leaves either the old state or the new one. A file
that does not parse stops the node with an error naming it: guessing an
epoch or a vote could let this node vote twice in one epoch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from quorum.node.errors import QuorumStateError
from quorum.raft import ElectionState

__all__ = ["QUORUM_STATE_FILE", "QuorumStateFile"]

QUORUM_STATE_FILE: Final = "quorum-state"
_ZERO_UUID_TEXT: Final = "AAAAAAAAAAAAAAAAAAAAAA"
_NONE: Final = -1


def _id_or_none(value: int) -> int | None:
    return None if value == _NONE else value


class QuorumStateFile:
    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / QUORUM_STATE_FILE
        self._tmp = partition_dir / (QUORUM_STATE_FILE + ".tmp")

    def read(self) -> ElectionState | None:
        """The stored state; None when the file does not exist (a first start)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise QuorumStateError(f"cannot read the quorum-state file {self.path}: {exc}") from exc
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise self._corrupt(f"it is not JSON ({exc})") from exc
        return self._parse(data)

    def _parse(self, data: Any) -> ElectionState:
        if not isinstance(data, dict):
            raise self._corrupt("it does not hold a JSON object")
        version = data.get("data_version", 0)
        if version not in (0, 1):
            raise self._corrupt(f"data_version {version!r} is not 0 or 1")
        fields = {}
        for key in ("leaderId", "leaderEpoch", "votedId"):
            value = data.get(key)
            if type(value) is not int:
                raise self._corrupt(f"{key} is {value!r}, not an integer")
            fields[key] = value
        epoch = fields["leaderEpoch"]
        if epoch < 0 or fields["leaderId"] < _NONE or fields["votedId"] < _NONE:
            raise self._corrupt(f"negative epoch or node id in {data!r}")
        return ElectionState(
            epoch, _id_or_none(fields["leaderId"]), _id_or_none(fields["votedId"])
        )

    def _corrupt(self, why: str) -> QuorumStateError:
        return QuorumStateError(
            f"the quorum-state file {self.path} is corrupt: {why}. It holds this node's "
            f"epoch and vote, which pykraft does not guess; restore the file from a backup"
        )

    def write(self, state: ElectionState) -> None:
        """Durably replace the file (temp file, fsync, rename, directory fsync)."""
        line = json.dumps(
            {
                "leaderId": _NONE if state.leader_id is None else state.leader_id,
                "leaderEpoch": state.epoch,
                "votedId": _NONE if state.voted_id is None else state.voted_id,
                "votedDirectoryId": _ZERO_UUID_TEXT,
                "data_version": 1,
            },
            separators=(",", ":"),
        )
        try:
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, line.encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self._tmp, self.path)
            _fsync_dir(self.path.parent)
        finally:
            self._tmp.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
