"""A Spark standalone cluster on loopback, from the pyspark package's own jars.

The wheel ships ``bin/spark-class`` and every jar a master and a worker need. Both run as
processes this test owns, each in a process group of its own that is killed and reaped on
leaving; their work and temporary files stay in the given directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pyspark

__all__ = ["SPARK_HOME", "Standalone", "python_without_pykraft", "spark_env", "standalone_cluster"]

SPARK_HOME = Path(pyspark.__file__).parent
REGISTERED = b"Successfully registered with master"
READY_TIMEOUT_S = 60.0


@attrs.frozen
class Standalone:
    master_url: str
    work_dir: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# run first in the wrapped interpreter (a sitecustomize): pykraft's editable install is a
# finder on sys.meta_path and a path hook; both go, so ``import broker`` fails there as on a
# worker machine that never installed pykraft
_NO_PYKRAFT = """
import sys
_ours = "__editable___pykraft"
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith(_ours)]
sys.path_hooks[:] = [h for h in sys.path_hooks if not getattr(h, "__module__", "").startswith(_ours)]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]
sys.path_importer_cache.clear()
"""


def python_without_pykraft(base: Path) -> Path:
    """An interpreter with pyspark and nothing of pykraft: this venv's Python, started with
    a ``sitecustomize`` that removes pykraft's editable install (``PYSPARK_PYTHON`` for a
    worker that must run the job from ``--py-files`` alone)."""
    site = base / "no-pykraft-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_NO_PYKRAFT)
    wrapper = base / "python-without-pykraft"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def spark_env(base: Path) -> dict[str, str]:
    """The environment of every Spark process: loopback, files under ``base``, no PYTHONPATH
    (a worker has pyspark and nothing of pykraft)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_DIR=str(base / "work"),
        SPARK_LOG_DIR=str(base / "logs"),
        # every JVM, the executors the worker starts included: temporary files under base
        JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={base}",
    )
    return env


def _start(args: list[str], log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


@contextlib.contextmanager
def standalone_cluster(base: Path) -> Iterator[Standalone]:
    """A master and one worker (2 cores, 1 GiB) registered with it."""
    env = spark_env(base)
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(_start(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())], base / "master.log", env))
        worker_log = base / "worker.log"
        started.append(_start(
            ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
             "--memory", "1g", "--webui-port", str(_free_port()), master_url], worker_log, env))
        deadline = time.monotonic() + READY_TIMEOUT_S
        while REGISTERED not in worker_log.read_bytes():
            assert all(p.poll() is None for p in started), (
                f"a Spark daemon exited:\n{worker_log.read_text()[-2000:]}")
            assert time.monotonic() < deadline, (
                f"the worker did not register within {READY_TIMEOUT_S}s:\n"
                f"{worker_log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield Standalone(master_url=master_url, work_dir=base / "work")
    finally:
        for process in reversed(started):
            _stop(process)
