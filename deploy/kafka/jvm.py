"""The JVM command lines of Kafka's ``bin/`` scripts, for a resolved ``KafkaDistribution``.

What the release's scripts set (``bin/kafka-run-class.sh`` and ``bin/kafka-server-start.sh``
as of Kafka 4.0 and 4.1; 4.4 ships no scripts in Maven to check), and so what these
commands set:

- every JVM: ``KAFKA_JVM_PERFORMANCE_OPTS`` = ``-server -XX:+UseG1GC
  -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true``;
  ``KAFKA_JMX_OPTS`` = ``-Dcom.sun.management.jmxremote=true`` without authentication or
  SSL (no port: ``JMX_PORT`` is unset); ``-Dkafka.logs.dir=LOG_DIR``;
- a server (``kafka-server-start.sh``): ``KAFKA_HEAP_OPTS`` = ``-Xmx1G -Xms1G`` and
  ``-loggc``, which becomes ``-Xlog:gc*:file=LOG_DIR/kafkaServer-gc.log:time,tags:
  filecount=10,filesize=100M``;
- a tool (``kafka-run-class.sh`` alone): ``-Xmx256M``.

Logging: the release's ``config/log4j2.yaml`` sends the root logger at INFO to stdout
(and to files this launcher does not write); ``config/tools-log4j2.yaml`` sends WARN to
stderr, which keeps a tool's stdout clean for comparisons. ``write_log_configs`` writes the
same two settings as Log4j 2 properties files.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from deploy.kafka.resolve import KafkaDistribution
from deploy.layout import LaunchError

__all__ = [
    "JMX_OPTS",
    "PERFORMANCE_OPTS",
    "SERVER_HEAP",
    "TOOL_HEAP",
    "java_program",
    "server_command",
    "source_command",
    "tool_command",
    "write_log_configs",
]

PERFORMANCE_OPTS: Final = (
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
)
JMX_OPTS: Final = (
    "-Dcom.sun.management.jmxremote=true",
    "-Dcom.sun.management.jmxremote.authenticate=false",
    "-Dcom.sun.management.jmxremote.ssl=false",
)
SERVER_HEAP: Final = ("-Xmx1G", "-Xms1G")
TOOL_HEAP: Final = ("-Xmx256M",)
SERVER_MAIN: Final = "kafka.Kafka"

_SERVER_LOG_CONFIG: Final = "server-log4j2.properties"
_TOOLS_LOG_CONFIG: Final = "tools-log4j2.properties"

_SERVER_LOGGING: Final = """\
# config/log4j2.yaml of the release, less its file appenders: INFO to stdout
appender.out.type = Console
appender.out.name = STDOUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
"""

_TOOLS_LOGGING: Final = """\
# config/tools-log4j2.yaml of the release: WARN to stderr, stdout left to the tool
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
"""


def write_log_configs(directory: Path) -> tuple[Path, Path]:
    """The server's and the tools' Log4j 2 configs, written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    server = directory / _SERVER_LOG_CONFIG
    tools = directory / _TOOLS_LOG_CONFIG
    server.write_text(_SERVER_LOGGING)
    tools.write_text(_TOOLS_LOGGING)
    return server, tools


def java_program() -> str:
    """``$JAVA_HOME/bin/java`` when set, else ``java`` on the PATH (as kafka-run-class.sh)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        raise LaunchError("no java: Kafka 4.x needs a JDK 17 or newer (.ci/run installs "
                          "Debian's default-jdk-headless when java is missing)")
    return found


def server_command(
    distribution: KafkaDistribution, config: Path, *, log_dir: Path, log_config: Path,
    heap: Sequence[str] = SERVER_HEAP,
) -> list[str]:
    """``kafka-server-start.sh CONFIG`` as one ``java`` command."""
    gc_log = (f"-Xlog:gc*:file={log_dir / 'kafkaServer-gc.log'}:time,tags:"
              "filecount=10,filesize=100M")
    return [
        java_program(), *heap, *PERFORMANCE_OPTS, gc_log, *JMX_OPTS,
        f"-Dkafka.logs.dir={log_dir}", f"-Dlog4j2.configurationFile={log_config}",
        "-cp", distribution.classpath, SERVER_MAIN, str(config),
    ]


def tool_command(
    distribution: KafkaDistribution, main_class: str, args: Sequence[str], *,
    log_config: Path, log_dir: Path, heap: Sequence[str] = TOOL_HEAP,
) -> list[str]:
    """``kafka-run-class.sh MAIN_CLASS ARGS`` (what every ``bin/kafka-*.sh`` tool runs)."""
    return [
        java_program(), *heap, *PERFORMANCE_OPTS, *JMX_OPTS,
        f"-Dkafka.logs.dir={log_dir}", f"-Dlog4j2.configurationFile={log_config}",
        "-cp", distribution.classpath, main_class, *args,
    ]


def source_command(
    distribution: KafkaDistribution, source: Path, args: Sequence[str], *,
    log_config: Path, heap: Sequence[str] = TOOL_HEAP,
) -> list[str]:
    """A single-file Java program run from source (JEP 330: no build step), with Kafka's
    jars on its class path and the tools' logging."""
    return [
        java_program(), *heap, *PERFORMANCE_OPTS, f"-Dlog4j2.configurationFile={log_config}",
        "-cp", distribution.classpath, str(source), *args,
    ]
