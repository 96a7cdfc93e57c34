"""A launcher for the lifeline test: ``python -m tests.integration.lifeline_launcher DIR HOW``.

Starts one controller and one broker (test profile) under DIR, prints
``NODES <pid> <pid>`` (and ``HOLDER <pid>`` for leaked-write-end) and waits
to be killed. HOW is how it starts them:

* ``main-thread``: from the main thread (the lifeline and the parent-death signal);
* ``worker-thread``: from a thread that has ended before the PIDs are printed
  (the lifeline only; the nodes must outlive that thread);
* ``leaked-write-end``: from the main thread, then forks a child without exec
  that keeps a copy of the lifeline's write end (the parent-death signal only).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from deploy import ClusterSpec, LocalCluster

HOWS = ("main-thread", "worker-thread", "leaked-write-end")


def _hold_forever() -> None:
    while True:
        signal.pause()


def main() -> None:
    base_dir, how = Path(sys.argv[1]), sys.argv[2]
    assert how in HOWS, f"HOW is one of {HOWS}, not {how!r}"
    cluster = LocalCluster(base_dir, ClusterSpec(controllers=1, brokers=1))
    if how == "worker-thread":
        starter = threading.Thread(target=cluster.start)
        starter.start()
        starter.join()
    else:
        cluster.start()
    pids = [cluster.pid(n) for n in cluster.node_ids + cluster.broker_ids]
    print("NODES " + " ".join(map(str, pids)), flush=True)
    if how == "leaked-write-end":
        holder = os.fork()
        if holder == 0:
            _hold_forever()
            os._exit(0)
        print(f"HOLDER {holder}", flush=True)
    _hold_forever()  # until killed: no close(), no stop


if __name__ == "__main__":
    main()
