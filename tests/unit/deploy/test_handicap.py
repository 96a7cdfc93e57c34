"""The handicap that makes this machine slower on purpose: its setting, its burners and its
CPU quota groups, started and cleaned up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploy import handicap
from deploy.handicap import CpuHandicap, handicap_from_env


def test_the_setting_is_a_factor_or_nothing() -> None:
    assert handicap_from_env({}) is None
    assert handicap_from_env({"PYKRAFT_HANDICAP": ""}) is None
    assert handicap_from_env({"PYKRAFT_HANDICAP": "1"}) is None
    found = handicap_from_env({"PYKRAFT_HANDICAP": "2.5", "PYKRAFT_HANDICAP_MODE": "burners"})
    assert found is not None and found.target_factor == 2.5
    with pytest.raises(ValueError, match="PYKRAFT_HANDICAP='slow'"):
        handicap_from_env({"PYKRAFT_HANDICAP": "slow"})
    with pytest.raises(ValueError, match="'quota' or by 'burners'"):
        handicap_from_env({"PYKRAFT_HANDICAP": "2", "PYKRAFT_HANDICAP_MODE": "nice"})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_burners_slow_the_probe_and_are_gone_after_stop() -> None:
    slow = CpuHandicap(1.2, mode="burners")
    report = slow.start()
    try:
        burners = [b.pid for b in slow._burners]
        assert report.mode == "burners" and len(burners) >= os.cpu_count()  # type: ignore[operator]
        assert all(_alive(pid) for pid in burners)
        assert report.probe_handicapped_ms > 0 and report.probe_alone_ms > 0
        assert "burner processes" in report.describe()
    finally:
        slow.stop()
    assert not any(_alive(pid) for pid in burners)


def _quota_possible() -> bool:
    return os.geteuid() == 0 and handicap._QuotaGroups.find() is not None


@pytest.mark.skipif(not _quota_possible(),
                    reason="a CPU quota needs root and a writable cgroup cpu controller")
def test_a_quota_adopts_this_process_and_its_children_and_removes_its_groups() -> None:
    slow = CpuHandicap(2.0, mode="quota")
    report = slow.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert report.mode == "quota"
        handicap.adopt(child.pid)  # what the launcher does for every node it starts
        groups = slow._groups
        assert groups is not None
        assert (groups.parent / f"pid-{child.pid}").is_dir()
        assert str(child.pid) in (groups.parent / f"pid-{child.pid}" / "cgroup.procs").read_text()
        assert (groups.parent / f"pid-{os.getpid()}").is_dir()
        parent = groups.parent
    finally:
        slow.stop()
        child.kill()
        child.wait()
    assert not parent.exists()
    # nothing is adopted once the handicap is off
    handicap.adopt(os.getpid())
    assert not parent.exists()
