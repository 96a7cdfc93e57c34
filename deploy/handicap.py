"""``CpuHandicap``: this machine made slower on purpose, for by-hand runs at scale.

A machine two or three times slower than the one behind the figures in
docs/ is where defects of ordering show (a request that waits behind a long
operation, a client that gives up early): the scale layer and ``bench_scale``
are run under a handicap before such work is called done.

    PYKRAFT_HANDICAP=2.5 scripts/test scale
    python -m bench.bench_scale --handicap 2.5

Two ways, the first that this machine allows:

* **CPU quota** (root, with the cgroup cpu controller, v1 or v2): every
  process of the run (this one, and every node a ``LocalCluster`` starts
  while the handicap is on) gets a cgroup of its own whose CFS quota is
  1/FACTOR of a core, in periods of 10 ms. That is a machine whose every core
  is FACTOR times slower for single-threaded work, however many processes
  are busy at once, which is what a slower CI machine is to a Python node.
* **CPU burners** otherwise: processes that spin at the nodes' priority, a
  core's worth at a time until the probe is slow enough. They slow one busy
  process by the factor, but six busy nodes by less (the kernel shares the
  cores among more of them), so a run under burners is a milder test.

``start`` calibrates: it times a fixed CPU-bound probe (the wire codec
encoding and decoding metadata records, the nodes' own kind of work) in
this process before and after, and the quota is tightened or burners are
added until the probe runs at least ``target_factor`` times slower; the
factor reached is printed by every handicapped run (``describe``). A burner
stops by itself once the process that started it is gone; groups are
removed by ``stop``, their remaining processes moved back first.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Final

import attrs

__all__ = [
    "HANDICAP_ENV",
    "CpuHandicap",
    "HandicapReport",
    "adopt",
    "handicap_from_env",
    "probe_seconds",
]

HANDICAP_ENV: Final = "PYKRAFT_HANDICAP"
# "quota" or "burners" to choose; unset: the quota where this machine allows it
HANDICAP_MODE_ENV: Final = "PYKRAFT_HANDICAP_MODE"
_PROBE_RECORDS: Final = 25_000
_PROBE_RUNS: Final = 5
_MAX_BURNERS_PER_CORE: Final = 8
_PERIOD_US: Final = 10_000
_MIN_QUOTA_US: Final = 1_000  # the kernel's least CFS quota
_CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
# a burner spins in steps of a few milliseconds and stops once its parent is gone
_BURNER: Final = """\
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(200_000):
        pass
"""

_active: CpuHandicap | None = None


@attrs.frozen
class HandicapReport:
    mode: str  # "quota" or "burners"
    detail: str  # the quota per process, or how many burners
    probe_alone_ms: float
    probe_handicapped_ms: float
    target_factor: float

    @property
    def factor(self) -> float:
        return self.probe_handicapped_ms / self.probe_alone_ms

    def describe(self) -> str:
        return (
            f"CPU handicap ({self.detail}): the probe took {self.probe_handicapped_ms:.0f} ms "
            f"against {self.probe_alone_ms:.0f} ms without: {self.factor:.2f}x slower "
            f"(asked for {self.target_factor:g}x)"
        )


def _probe_once() -> float:
    """Seconds to encode and decode ``_PROBE_RECORDS`` partition records (pure Python)."""
    from quorum.wire.messages.metadata_records import PartitionRecord
    from quorum.wire.metadata_serde import decode_metadata_record, encode_metadata_record

    topic_id = uuid.UUID(int=7)
    started = time.perf_counter()
    for index in range(_PROBE_RECORDS):
        record = PartitionRecord(
            partition_id=index, topic_id=topic_id, replicas=(1, 2, 3), isr=(1, 2, 3),
            leader=1 + index % 3, leader_epoch=0, partition_epoch=0,
        )
        decode_metadata_record(encode_metadata_record(record))
    return time.perf_counter() - started


def probe_seconds(runs: int = _PROBE_RUNS) -> float:
    """The probe's median wall time over ``runs`` runs (after one to warm up)."""
    _probe_once()
    return statistics.median(_probe_once() for _ in range(runs))


class _QuotaGroups:
    """One cgroup per adopted process under a parent group of this run's own."""

    def __init__(self, version: int, controller_root: Path, home: Path) -> None:
        self.version = version
        self._controller_root = controller_root
        self._home = home  # where this process was, to return to
        self.parent = controller_root / f"pykraft-handicap-{os.getpid()}"
        self.quota_us = _PERIOD_US

    @classmethod
    def find(cls) -> _QuotaGroups | None:
        """The cpu controller this process may write to (None: none)."""
        if os.geteuid() != 0:
            return None
        v1 = _CGROUP_ROOT / "cpu"
        if (v1 / "cpu.cfs_quota_us").exists():
            return cls(1, v1, v1 / _own_group("cpu"))
        controllers = _CGROUP_ROOT / "cgroup.controllers"
        if controllers.exists() and "cpu" in controllers.read_text().split():
            return cls(2, _CGROUP_ROOT, _CGROUP_ROOT / _own_group(""))
        return None

    def create(self) -> None:
        self._sweep_stale()
        self.parent.mkdir()
        if self.version == 2:
            (self._controller_root / "cgroup.subtree_control").write_text("+cpu")
            (self.parent / "cgroup.subtree_control").write_text("+cpu")

    def adopt(self, pid: int) -> None:
        group = self.parent / f"pid-{pid}"
        group.mkdir(exist_ok=True)
        self._limit(group)
        (group / "cgroup.procs").write_text(str(pid))

    def set_quota(self, quota_us: int) -> None:
        self.quota_us = max(_MIN_QUOTA_US, quota_us)
        for group in self._groups():
            self._limit(group)

    def _sweep_stale(self) -> None:
        """Groups left by a run that was killed before it could remove them (their owner is
        gone, and so are the processes they held)."""
        for stale in self._controller_root.glob("pykraft-handicap-*"):
            owner = stale.name.rsplit("-", 1)[1]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                for group in (p for p in stale.iterdir() if p.is_dir()):
                    with contextlib.suppress(OSError):  # a process in it still runs
                        group.rmdir()
                with contextlib.suppress(OSError):
                    stale.rmdir()

    def remove(self) -> None:
        """Every process still in a group goes back where this one came from; then the
        groups go."""
        for group in self._groups():
            for pid in (group / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # it exited meanwhile
                    (self._home / "cgroup.procs").write_text(pid)
            group.rmdir()
        self.parent.rmdir()

    def _groups(self) -> list[Path]:
        return sorted(p for p in self.parent.iterdir() if p.is_dir()) if self.parent.exists() \
            else []

    def _limit(self, group: Path) -> None:
        if self.version == 1:
            (group / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(self.quota_us))
        else:
            (group / "cpu.max").write_text(f"{self.quota_us} {_PERIOD_US}")


def _own_group(controller: str) -> str:
    """This process's group of ``controller`` ("" for cgroup v2), relative to its root."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller and controller in names.split(",")) or (not controller and not names):
            return path.lstrip("/")
    return ""


class CpuHandicap:
    def __init__(self, target_factor: float, *, mode: str | None = None) -> None:
        if target_factor < 1:
            raise ValueError(f"a handicap factor is at least 1, not {target_factor}")
        if mode not in (None, "quota", "burners"):
            raise ValueError(f"a handicap is by 'quota' or by 'burners', not {mode!r}")
        self.target_factor = target_factor
        self.cores = os.cpu_count() or 1
        self._mode = mode
        self._groups: _QuotaGroups | None = None
        self._burners: list[subprocess.Popen[bytes]] = []
        self.report: HandicapReport | None = None

    def start(self) -> HandicapReport:
        """Calibrated to slow the probe by ``target_factor`` (see the module docstring)."""
        global _active
        assert _active is None, "one handicap at a time"
        alone = probe_seconds()
        groups = None if self._mode == "burners" else _QuotaGroups.find()
        if groups is None and self._mode == "quota":
            raise RuntimeError("a CPU quota needs root and the cgroup cpu controller")
        _active = self
        if groups is not None:
            self._groups = groups
            groups.create()
            groups.adopt(os.getpid())
            handicapped = self._calibrate_quota(groups, alone)
            detail = (f"a CFS quota of {groups.quota_us} us per {_PERIOD_US} us for each "
                      f"process, cgroup v{groups.version}")
        else:
            handicapped = self._calibrate_burners(alone)
            detail = f"{len(self._burners)} burner processes on {self.cores} cores"
        self.report = HandicapReport(
            mode="quota" if groups is not None else "burners", detail=detail,
            probe_alone_ms=alone * 1000, probe_handicapped_ms=handicapped * 1000,
            target_factor=self.target_factor,
        )
        return self.report

    def adopt(self, pid: int) -> None:
        """A process started under this handicap (a node) is slowed as this one is."""
        if self._groups is not None:
            self._groups.adopt(pid)

    def stop(self) -> None:
        """Burners killed and reaped (by their pids); groups removed."""
        global _active
        burners, self._burners = self._burners, []
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()
        groups, self._groups = self._groups, None
        if groups is not None:
            groups.remove()
        if _active is self:
            _active = None

    def __enter__(self) -> CpuHandicap:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _calibrate_quota(self, groups: _QuotaGroups, alone: float) -> float:
        groups.set_quota(int(_PERIOD_US / self.target_factor))
        handicapped = probe_seconds()
        for _ in range(3):
            factor = handicapped / alone
            if factor >= self.target_factor or groups.quota_us <= _MIN_QUOTA_US:
                break
            groups.set_quota(int(groups.quota_us * factor / self.target_factor) - 100)
            handicapped = probe_seconds()
        return handicapped

    def _calibrate_burners(self, alone: float) -> float:
        while True:
            for _ in range(self.cores):
                self._burners.append(subprocess.Popen(
                    [sys.executable, "-c", _BURNER, str(os.getpid())],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ))
            handicapped = probe_seconds()
            if (handicapped / alone >= self.target_factor
                    or len(self._burners) >= _MAX_BURNERS_PER_CORE * self.cores):
                return handicapped


def adopt(pid: int) -> None:
    """A process this one started joins the running handicap, if there is one."""
    if _active is not None:
        _active.adopt(pid)


def handicap_from_env(environ: dict[str, str] | None = None) -> CpuHandicap | None:
    """The handicap ``PYKRAFT_HANDICAP=FACTOR`` asks for (None: unset, empty or 1);
    ``PYKRAFT_HANDICAP_MODE`` chooses ``quota`` or ``burners``."""
    env = os.environ if environ is None else environ
    value = env.get(HANDICAP_ENV, "").strip()
    if not value:
        return None
    try:
        factor = float(value)
    except ValueError:
        raise ValueError(
            f"{HANDICAP_ENV}={value!r}: give the factor by which to slow this machine, "
            "such as 2.5"
        ) from None
    mode = env.get(HANDICAP_MODE_ENV, "").strip() or None
    return None if factor <= 1 else CpuHandicap(factor, mode=mode)
