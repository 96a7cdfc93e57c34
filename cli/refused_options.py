"""Kafka options a console tool knows but does not offer: a clear refusal, not "no such option".

A refused option is hidden from ``--help``; given, it ends the command with
the reason and what to do instead (stderr, exit status 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from cli.console import fail

__all__ = ["refused_option"]

F = TypeVar("F", bound=Callable[..., Any])


def refused_option(name: str, reason: str, *, is_flag: bool = False) -> Callable[[F], F]:
    def refuse(_ctx: click.Context, _param: click.Parameter, value: object) -> None:
        if value:
            fail(f"{name} is not supported: {reason}")

    return click.option(
        name, is_flag=is_flag, hidden=True, expose_value=False, callback=refuse,
        is_eager=True,
    )
