"""The launcher's lifeline: a node that a launcher started stops when the launcher dies.

A launcher (``deploy.LocalCluster``) makes one pipe per cluster, keeps the
only write end (close-on-exec, and ``subprocess`` closes every other fd
in its children) and hands each node the read end, named in the node's
environment::

    PYKRAFT_LIFELINE_FD=N           the read end, an fd the node inherited
    PYKRAFT_LIFELINE_PDEATHSIG=1    the launcher forked the node from its main thread (else 0)

Nobody ever writes to the pipe, so the read end becomes readable only at
end of file: when every write end is closed, i.e. when the launcher exited
however it ended (kill -9 included: the kernel closes a dead process's
files). The node then stops in order, and at once after ``LIFELINE_GRACE_S``
(``quorum.node.process``). A node without these variables (``kraft
server-start`` by hand, systemd) watches nothing.

The parent-death signal (Linux ``PR_SET_PDEATHSIG``) is the second line of
defence, for a write end that leaked into a process outliving the launcher
(a fork without exec keeps every fd, close-on-exec or not), so that end of
file never comes. It is the second line, not the first, because it is
Linux's alone and because the kernel sends it when the *thread* that forked
the node exits, not the launcher: a launcher that starts nodes from a worker
thread would see them stopped when that thread ends. So a node arms it only
when the launcher says it forked from its main thread, which lives as long
as the process. The node arms it itself at start, not the launcher in a
``preexec_fn``: that runs between fork and exec, unsafe in a launcher with
threads (the link proxies').
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
from collections.abc import Mapping, MutableMapping
from typing import Final

import attrs
import trio

from quorum.node.errors import NodeStartupError

__all__ = [
    "LIFELINE_FD_ENV",
    "LIFELINE_GRACE_S",
    "LIFELINE_PDEATHSIG_ENV",
    "PARENT_DEATH_SIGNAL",
    "Lifeline",
    "arm_parent_death_signal",
    "lifeline_environ",
    "parse_lifeline",
    "take_lifeline",
    "wait_until_launcher_gone",
]

LIFELINE_FD_ENV: Final = "PYKRAFT_LIFELINE_FD"
LIFELINE_PDEATHSIG_ENV: Final = "PYKRAFT_LIFELINE_PDEATHSIG"
# how long an orderly stop may take once the launcher is gone: a leader's hand-over
# and a broker's controlled shutdown are bounded by less in the test profile
LIFELINE_GRACE_S: Final = 5.0
# SIGTERM, not SIGKILL: the kernel signals the children in the same exit that closes
# the launcher's files, so SIGKILL would always win the race against the lifeline's end
# of file and no node would ever stop in order or say why it stopped; SIGTERM takes the
# same orderly path, and the lifeline (when its end of file comes) bounds it by the grace
PARENT_DEATH_SIGNAL: Final = signal.SIGTERM

_PR_SET_PDEATHSIG: Final = 1  # <linux/prctl.h>
_READ_BYTES: Final = 512


@attrs.frozen
class Lifeline:
    fd: int
    # the launcher forked the node from its main thread: the parent-death signal is safe
    parent_death_signal: bool


def lifeline_environ(fd: int, *, parent_death_signal: bool) -> dict[str, str]:
    """The variables a launcher sets in a node's environment (fd passed with ``pass_fds``);
    both, so that neither is inherited from the launcher's own environment."""
    return {LIFELINE_FD_ENV: str(fd), LIFELINE_PDEATHSIG_ENV: "1" if parent_death_signal else "0"}


def parse_lifeline(environ: Mapping[str, str]) -> Lifeline | None:
    """The lifeline ``environ`` names, or None for a node started without a launcher."""
    value = environ.get(LIFELINE_FD_ENV)
    if value is None:
        return None
    if not value.isdigit():
        raise NodeStartupError(f"{LIFELINE_FD_ENV}={value!r} is not a file descriptor number; "
                               f"unset it to start the node without a launcher")
    return Lifeline(int(value), parent_death_signal=environ.get(LIFELINE_PDEATHSIG_ENV) == "1")


def take_lifeline(environ: MutableMapping[str, str] | None = None) -> Lifeline | None:
    """This process's lifeline, ready to watch; arms the parent-death signal if safe.

    The variables leave ``environ`` (``os.environ`` by default) and the fd
    becomes close-on-exec: a program this node runs is not started by a launcher.
    """
    environ = os.environ if environ is None else environ
    lifeline = parse_lifeline(environ)
    environ.pop(LIFELINE_FD_ENV, None)
    environ.pop(LIFELINE_PDEATHSIG_ENV, None)
    if lifeline is None:
        return None
    try:
        mode = os.fstat(lifeline.fd).st_mode
    except OSError as exc:
        raise NodeStartupError(f"{LIFELINE_FD_ENV}={lifeline.fd}: {exc.strerror}; "
                               f"unset it to start the node without a launcher") from None
    if not stat.S_ISFIFO(mode):
        raise NodeStartupError(f"{LIFELINE_FD_ENV}={lifeline.fd} is not a pipe; "
                               f"unset it to start the node without a launcher")
    os.set_inheritable(lifeline.fd, False)
    # other nodes share this open pipe: a read must never block the trio thread
    os.set_blocking(lifeline.fd, False)
    if lifeline.parent_death_signal:
        # if the launcher died before this, the signal is armed for whoever adopted
        # the node, and the lifeline's end of file (already there) stops it
        arm_parent_death_signal(PARENT_DEATH_SIGNAL)
    return lifeline


def arm_parent_death_signal(sig: signal.Signals) -> bool:
    """Ask Linux for ``sig`` when the thread that forked this process exits; False
    where there is no such thing."""
    if not sys.platform.startswith("linux"):
        return False
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")
    return True


async def wait_until_launcher_gone(fd: int) -> None:
    """Until the lifeline's read end ``fd`` is at end of file (every write end closed)."""
    while True:
        await trio.lowlevel.wait_readable(fd)
        try:
            if not os.read(fd, _READ_BYTES):
                return
        except BlockingIOError:
            # readable for another node sharing the pipe, which took the bytes first
            pass
        # bytes are not part of the protocol: nobody writes, so ignore them
