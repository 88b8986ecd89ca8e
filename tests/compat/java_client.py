"""Kafka's own Java client (kafka-clients 3.9.2, fetched by platform/setup into .venv/java)
running tests/compat/java/SecurityClient.java: produce, consume in a group, create a topic,
with the client settings a Java application passes (a .properties file). One JVM serves all
commands of a test module (a JVM's start costs seconds on a loaded machine)."""

from __future__ import annotations

import itertools
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import ROOT

JAR = ROOT / ".venv" / "java" / "kafka-clients-3.9.2.jar"
SLF4J = Path("/usr/share/java/slf4j-api.jar")  # Debian's, beside ZooKeeper's jars
SOURCE = Path(__file__).parent / "java" / "SecurityClient.java"


@dataclass
class JavaResult:
    ok: bool
    words: list[str]  # after OK/ERROR: ["produced", "10"], ["TopicAuthorizationException", ...]
    line: str

    @property
    def error(self) -> str | None:
        return None if self.ok else self.words[0]


class JavaClient:
    def __init__(self, classes: Path, directory: Path):
        self.directory = directory
        self._names = itertools.count()
        self.stderr = open(directory / "java.stderr", "wb")  # noqa: SIM115 - lives with the JVM
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", f"{classes}:{JAR}:{SLF4J}", "SecurityClient"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            bufsize=1,
        )

    def run(self, properties: dict[str, str], *args: str, timeout: float = 150) -> JavaResult:
        config = self.directory / f"client-{next(self._names)}.properties"
        config.write_text("".join(f"{k}={_escape(v)}\n" for k, v in properties.items()))
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\t".join([str(config), *args]) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"the Java client did not answer {args} in {timeout}s")
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"the Java client exited: {self._stderr_tail()}")
            if line.startswith(("OK", "ERROR")):
                words = line.split()
                return JavaResult(words[0] == "OK", words[1:], line.strip())

    def _stderr_tail(self) -> str:
        self.stderr.flush()
        return (self.directory / "java.stderr").read_text(errors="replace")[-3000:]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.stderr.close()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\")


def start_java_client(directory: Path) -> JavaClient:
    """Compiles SecurityClient.java into `directory` and starts its JVM."""
    if shutil.which("javac") is None or not JAR.exists() or not SLF4J.exists():
        pytest.skip(f"needs javac, {JAR} (make setup fetches it) and {SLF4J}")
    classes = directory / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", f"{JAR}:{SLF4J}", "-d", str(classes), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return JavaClient(classes, directory)
