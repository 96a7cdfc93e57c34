"""Kafka's tools run unmodified: one JVM per tool, or several tools in one JVM in turn.

``run_tool`` is what a ``bin/kafka-*.sh`` script does (``kafka-run-class.sh MAIN ARGS``);
``run_mains`` runs many tools' main classes in one JVM (``MainRunner.java`` beside this
file, run from source: Kafka's ``Exit`` procedure is intercepted, so every tool's exit
status, stdout and stderr come back separately) and saves a JVM start per tool, about
two seconds each on a busy 2-core machine.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from deploy.kafka.jvm import source_command, tool_command
from deploy.kafka.resolve import KafkaDistribution
from deploy.layout import LaunchError

__all__ = ["MAIN_RUNNER", "ToolRun", "run_mains", "run_tool", "with_stdin"]

MAIN_RUNNER: Final = Path(__file__).resolve().with_name("MainRunner.java")
_MARKER: Final = "PYKRAFT-MAIN-RUNNER "
_DEFAULT_TIMEOUT_S: Final = 120.0


@attrs.frozen
class ToolRun:
    """One tool's run: its command, exit status and output."""

    command: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    def check(self) -> ToolRun:
        """This run, or LaunchError with its output if it did not exit 0."""
        if self.exit_code != 0:
            raise LaunchError(f"{' '.join(self.command)} exited {self.exit_code}\n"
                              f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}")
        return self


def run_tool(
    distribution: KafkaDistribution, main_class: str, args: Sequence[str], *,
    log_config: Path, log_dir: Path, timeout: float = _DEFAULT_TIMEOUT_S,
) -> ToolRun:
    """``MAIN_CLASS ARGS`` in a JVM of its own, as the tool's script starts it."""
    command = tool_command(distribution, main_class, args, log_config=log_config,
                           log_dir=log_dir)
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{main_class} {' '.join(args)} ran longer than {timeout}s") from None
    return ToolRun(command=(main_class, *args), exit_code=result.returncode,
                   stdout=result.stdout.decode(errors="replace"),
                   stderr=result.stderr.decode(errors="replace"))


def with_stdin(path: Path, command: Sequence[str]) -> tuple[str, ...]:
    """``command`` for ``run_mains`` with the file at ``path`` as its standard input (a
    shell's ``< PATH``; MainRunner gives every other run an empty one)."""
    return (f"<{path}", *command)


def run_mains(
    distribution: KafkaDistribution, commands: Sequence[Sequence[str]], *,
    log_config: Path, timeout: float = _DEFAULT_TIMEOUT_S,
) -> list[ToolRun]:
    """Each command (main class, then arguments) in turn in one JVM; one ToolRun each."""
    for command in commands:
        if not command or any("\t" in word or "\n" in word for word in command):
            raise LaunchError(f"a command is a main class and words without tabs or "
                              f"newlines: {list(command)!r}")
    stdin = "".join("\t".join(command) + "\n" for command in commands).encode()
    java = source_command(distribution, MAIN_RUNNER, (), log_config=log_config)
    try:
        result = subprocess.run(java, input=stdin, capture_output=True, timeout=timeout,
                                check=False)
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{len(commands)} tool runs took longer than {timeout}s: "
                          f"{[c[0] for c in commands]}") from None
    runs = parse_runner_output(result.stdout.decode(errors="replace"), commands)
    if len(runs) != len(commands):
        raise LaunchError(f"MainRunner reported {len(runs)} of {len(commands)} runs "
                          f"(exit {result.returncode})\n"
                          + result.stderr.decode(errors="replace")[-4000:])
    return runs


def parse_runner_output(text: str, commands: Sequence[Sequence[str]]) -> list[ToolRun]:
    """The ToolRuns in MainRunner's stdout, in order (lines without its marker ignored)."""
    runs: list[ToolRun] = []
    for line in text.splitlines():
        if not line.startswith(_MARKER):
            continue
        report = json.loads(line[len(_MARKER):])
        index = int(report["index"])
        if index != len(runs):
            raise LaunchError(f"MainRunner reported run {index} after {len(runs)} runs")
        runs.append(ToolRun(command=tuple(commands[index]), exit_code=int(report["exit"]),
                            stdout=str(report["stdout"]), stderr=str(report["stderr"])))
    return runs
