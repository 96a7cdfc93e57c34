"""Where the ``kraft`` command writes: plain rich consoles and one way to fail."""

from __future__ import annotations

import signal
from typing import NoReturn

import click
from rich.console import Console, RenderableType
from rich.text import Text

__all__ = ["fail", "interrupt_on_sigint", "show"]


def _console(*, stderr: bool) -> Console:
    # Built per call so that click's test runner, which swaps sys.stdout and
    # sys.stderr, sees the output. No markup, highlighting or wrapping: the
    # output is meant to read like Kafka's tools and to be parsed by scripts.
    return Console(stderr=stderr, markup=False, highlight=False, emoji=False, soft_wrap=True)


def show(renderable: RenderableType) -> None:
    _console(stderr=False).print(renderable)


def fail(message: str) -> NoReturn:
    """Print ``message`` on stderr and exit with status 1 (as Kafka's tools do)."""
    _console(stderr=True).print(Text(message))
    raise click.exceptions.Exit(1)


def interrupt_on_sigint() -> None:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt, which trio turns into an orderly stop.

    Explicitly: Python installs its handler only when SIGINT is not ignored at
    start, and a shell starting a background job without job control ignores
    it, so kill -INT would otherwise do nothing."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
