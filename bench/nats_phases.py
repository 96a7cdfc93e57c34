"""One phase of the NATS peer: load processes (``bench.nats_load``) started, lined up, timed.

``run_phase`` starts one process per argument list of a ``PhasePlan``
(``bench.nats_lineup``), waits until every one has
connected and warmed up (``READY``), sends ``GO`` to all at once, and collects
each ``RESULT``. The phase's throughput spans all of them: bytes over the
time from the first start to the last end (each process reports both on the
system-wide monotonic clock). CPU: each load process reports its own; each
nats-server's is read from /proc at GO and after the last result, so that
the report can say which side was saturated.

Every wait has a deadline; a process that fails or overruns is killed (by
PID) and the phase raises ``LoadFailed`` with the tail of its stderr, which
stays in ``log_dir``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Final

from bench.nats_figures import LatencyFigures, ThroughputFigures, percentile
from bench.nats_lineup import LoadReport, PhasePlan, PhaseResult
from quorum.node.lifeline import arm_parent_death_signal

__all__ = [
    "LoadFailed",
    "cpu_seconds",
    "latency_figures",
    "machine_busy_s",
    "run_phase",
    "throughput_figures",
]

# the directory holding the bench package, for the load processes' PYTHONPATH
_PROJECT_ROOT: Final = Path(__file__).resolve().parent.parent
# python start-up, import of nats-py, connect and warm-up
_READY_TIMEOUT_S: Final = 60.0
# beyond a phase's own bound: the acks of what was sent before it, closing
_RESULT_SLACK_S: Final = 45.0
_STOP_TIMEOUT_S: Final = 5.0
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


class LoadFailed(RuntimeError):
    """A load process failed, overran its bound, or reported errors."""


def machine_busy_s() -> tuple[float, float]:
    """Busy and total CPU seconds of the whole machine since boot, all cores (/proc/stat)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    total = sum(ticks[:8])
    return (total - ticks[3] - ticks[4]) / _CLOCK_TICKS, total / _CLOCK_TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # the command name may hold spaces: fields count from after its closing parenthesis
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


class LoadProcess:
    """One ``bench.nats_load`` process; its stdout lines read by a thread into a queue."""

    def __init__(self, kind: str, args: Sequence[str], log_path: Path,
                 module: str = "bench.nats_load") -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH")) if p)
        on_main = threading.current_thread() is threading.main_thread()
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, kind, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                # dies with the bench, as the servers do (bench.nats_cluster)
                preexec_fn=(lambda: arm_parent_death_signal(signal.SIGTERM)) if on_main else None,
            )
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,),
                                        daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def expect(self, prefix: str, deadline: float) -> str:
        """The rest of the first stdout line starting with ``prefix``."""
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise LoadFailed(f"no {prefix} from load process {self.process.pid} in time\n"
                                 f"{self.stderr_tail()}") from None
            if line is None:
                code = self.process.wait()
                raise LoadFailed(f"load process {self.process.pid} exited ({code}) before "
                                 f"{prefix}\n{self.stderr_tail()}")
            if line.startswith(prefix):
                return line[len(prefix):]

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("GO\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        """SIGTERM, SIGKILL after a bound; reaped, its pipes closed."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # the reader ends at end of file, which the exit brought; only then is stdout closed
        self._reader.join(timeout=_STOP_TIMEOUT_S)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a dead process
                    pipe.close()

    def stderr_tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return f"--- {self.log_path}\n" + "\n".join(text)


def run_phase(plan: PhasePlan, *, server_pids: Mapping[str, int], log_dir: Path,
              module: str = "bench.nats_load", on_go: Callable[[], None] | None = None
              ) -> PhaseResult:
    """One load process per argument list of ``plan``, started together.

    ``module`` is the load program (the data-plane bench runs its own with the same
    READY / GO / RESULT protocol); ``on_go`` runs just before GO (a profiler attached
    to the phase's work, not to the load processes' start-up)."""
    kind = plan.kind
    log_dir.mkdir(parents=True, exist_ok=True)
    loads = [LoadProcess(kind, args, log_dir / f"{kind}-{i + 1}.log", module)
             for i, args in enumerate(plan.process_args)]
    try:
        ready_by = time.monotonic() + _READY_TIMEOUT_S
        for load in loads:
            load.expect("READY", ready_by)
        cpu_before = {name: cpu_seconds(pid) for name, pid in server_pids.items()}
        busy_before, total_before = machine_busy_s()
        if on_go is not None:
            on_go()
        began = time.monotonic()
        for load in loads:
            load.go()
        done_by = began + plan.bound_s + _RESULT_SLACK_S
        reports = [LoadReport.from_json(load.expect("RESULT ", done_by)) for load in loads]
        wall_s = time.monotonic() - began
        busy_after, total_after = machine_busy_s()
        server_cpu = {name: cpu_seconds(pid) - cpu_before[name]
                      for name, pid in server_pids.items()}
    finally:
        for load in loads:
            load.stop()
    for report in reports:
        if report.errors:
            raise LoadFailed(f"{kind}: {report.errors} errors, the first: {report.first_error}")
    busy = 100.0 * (busy_after - busy_before) / max(total_after - total_before, 1e-9)
    return PhaseResult(loads=tuple(reports), wall_s=wall_s, server_cpu_s=server_cpu,
                       machine_busy_percent=busy)


def _cpu(phase: PhaseResult, roles: Mapping[str, str] | None) -> dict[str, float]:
    """Each process's CPU share, under its role's name where ``roles`` gives one."""
    return {(roles or {}).get(name, name): share for name, share in phase.cpu_percent().items()}


def throughput_figures(
    phase: PhaseResult, window: int = 0, roles: Mapping[str, str] | None = None
) -> ThroughputFigures:
    """What a produce or consume phase measured (both benches' peers report the same)."""
    return ThroughputFigures(processes=len(phase.loads), window=window, messages=phase.messages,
                             seconds=phase.seconds, mb_per_s=phase.mb_per_s,
                             cpu_percent=_cpu(phase, roles),
                             machine_busy_percent=phase.machine_busy_percent)


def latency_figures(phase: PhaseResult, roles: Mapping[str, str] | None = None) -> LatencyFigures:
    """What a one-record-at-a-time phase measured: its one load's percentiles."""
    (load,) = phase.loads
    return LatencyFigures(
        messages=load.messages,
        ack_p50_ms=1000 * percentile(load.ack_s, 0.5),
        ack_p99_ms=1000 * percentile(load.ack_s, 0.99),
        delivery_p50_ms=1000 * percentile(load.delivery_s, 0.5),
        delivery_p99_ms=1000 * percentile(load.delivery_s, 0.99),
        cpu_percent=_cpu(phase, roles),
        machine_busy_percent=phase.machine_busy_percent)
