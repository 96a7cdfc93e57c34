"""Apache Kafka's jars on demand: the pinned ``pom.xml`` resolved into a cache outside the repo.

    python -m deploy.kafka        # (or deploy/kafka/resolve) prints the directory of the jars

``resolve_kafka()`` runs ``mvn -B -q dependency:copy-dependencies -DincludeScope=runtime``
on ``deploy/kafka/pom.xml`` once per pom: the jars land in
``$PYKRAFT_KAFKA_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/pykraft/kafka-<version>/libs``,
with a stamp holding the pom's digest, and every later call with the same pom reuses them
without asking Maven anything. A changed pom (a new version, say) resolves again beside the
old one. Maven writes into a scratch directory that is renamed into place at the end, so an
interrupted or concurrent resolve never leaves a half-filled ``libs`` behind.

``java -cp 'LIBS/*' CLASS`` then runs what a release's ``bin/`` scripts run
(``deploy.kafka.jvm``); only the Maven fetch needs the network.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path
from typing import Final

import attrs

from deploy.cache_dirs import user_cache_root
from deploy.layout import LaunchError

__all__ = [
    "CLIENTS_POM",
    "POM",
    "SHELL_POM",
    "KafkaDistribution",
    "cache_root",
    "pinned_version",
    "resolve_clients",
    "resolve_kafka",
    "resolve_pom",
    "resolve_shell",
]

POM: Final = Path(__file__).resolve().with_name("pom.xml")
# the kafka-clients 3.9.x that Spark 4.x's Kafka connector brings (see that pom)
CLIENTS_POM: Final = Path(__file__).resolve().parent / "clients-3.9" / "pom.xml"
SHELL_POM: Final = Path(__file__).resolve().parent / "shell" / "pom.xml"
_STAMP: Final = "resolved-pom.sha256"
_MAVEN_NS: Final = "{http://maven.apache.org/POM/4.0.0}"
# a first resolve downloads about a hundred jars
_RESOLVE_TIMEOUT_S: Final = 900.0


@attrs.frozen
class KafkaDistribution:
    """One resolved Kafka: its version and the directory of every jar it runs with."""

    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        """The JVM's ``-cp`` value: every jar of ``libs`` (the JVM expands ``DIR/*``)."""
        return str(self.libs / "*")

    def has_class(self, name: str) -> bool:
        """Whether one of the jars holds class ``name`` (e.g. ``kafka.tools.StorageTool``)."""
        entry = name.replace(".", "/") + ".class"
        for jar in sorted(self.libs.glob("*.jar")):
            with zipfile.ZipFile(jar) as archive:
                if entry in archive.namelist():
                    return True
        return False


def pinned_version(pom: Path = POM) -> str:
    """The ``kafka.version`` property of the pom: the one place the version is written."""
    root = ElementTree.parse(pom).getroot()
    version = root.findtext(f"{_MAVEN_NS}properties/{_MAVEN_NS}kafka.version")
    if not version:
        raise LaunchError(f"{pom} has no <kafka.version> property")
    return version.strip()


def cache_root() -> Path:
    """Where resolved Kafkas live: ``$PYKRAFT_KAFKA_CACHE``, else the user's cache dir."""
    return user_cache_root("PYKRAFT_KAFKA_CACHE")


def _digest(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def _maven() -> str:
    found = shutil.which("mvn")
    if found is None:
        raise LaunchError("Maven (mvn) is not installed: .ci/run installs it with the JDK "
                          "(Debian: apt-get install maven default-jdk-headless)")
    return found


def resolve_kafka(pom: Path = POM, *, root: Path | None = None) -> KafkaDistribution:
    """The pinned Kafka's jars, resolved with Maven the first time for this pom."""
    return resolve_pom(pom, name="kafka", must_bring="kafka_2.13-*.jar", root=root)


def resolve_clients(pom: Path = CLIENTS_POM, *, root: Path | None = None) -> KafkaDistribution:
    """The pinned kafka-clients 3.9.x (Spark's) alone, in ``kafka-clients-<version>/libs``."""
    return resolve_pom(pom, name="kafka-clients", must_bring="kafka-clients-*.jar", root=root)


def resolve_shell(pom: Path = SHELL_POM, *, root: Path | None = None) -> KafkaDistribution:
    """Kafka's metadata shell (kafka-shell, pinned apart: see its pom) in
    ``kafka-shell-<version>/libs``."""
    return resolve_pom(pom, name="kafka-shell", must_bring="kafka-shell-*.jar", root=root)


def resolve_pom(pom: Path, *, name: str, must_bring: str,
                root: Path | None = None) -> KafkaDistribution:
    """The jars of ``pom`` (its ``kafka.version``) in ``ROOT/NAME-<version>/libs``, resolved
    with Maven the first time for this pom; ``must_bring`` is a jar name pattern that a
    good resolve always yields."""
    version = pinned_version(pom)
    home = (root or cache_root()) / f"{name}-{version}"
    distribution = KafkaDistribution(version=version, libs=home / "libs")
    digest = _digest(pom)
    stamp = home / _STAMP
    if stamp.exists() and stamp.read_text().strip() == digest and distribution.libs.is_dir():
        return distribution
    home.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="resolving-", dir=home))
    try:
        _copy_dependencies(pom, scratch / "libs")
        if not any((scratch / "libs").glob(must_bring)):
            raise LaunchError(f"Maven resolved {pom} but brought no {must_bring}")
        stamp.unlink(missing_ok=True)
        shutil.rmtree(distribution.libs, ignore_errors=True)
        try:
            os.replace(scratch / "libs", distribution.libs)
        except OSError:
            # a concurrent resolve of the same pom put its libs in place first
            if not distribution.libs.is_dir():
                raise
        stamp.write_text(digest + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return distribution


def _copy_dependencies(pom: Path, into: Path) -> None:
    command = [
        _maven(), "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={into}",
    ]
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=_RESOLVE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise LaunchError(f"Maven did not resolve {pom} in {_RESOLVE_TIMEOUT_S:.0f}s") from None
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode(errors="replace")
        raise LaunchError(f"Maven could not resolve {pom} (exit {result.returncode}):\n"
                          + "\n".join(output.splitlines()[-40:]))


def main() -> int:
    """Resolve every pinned pom (the Kafka release, Spark's kafka-clients, the metadata
    shell) so that the kafka layer's time is its tests'; print the Kafka release's libs."""
    try:
        distribution = resolve_kafka()
        resolve_clients()
        resolve_shell()
    except LaunchError as problem:
        print(problem, file=sys.stderr)
        return 1
    print(distribution.libs)
    return 0
