"""The command line that runs Debian's ZooKeeper package in the foreground.

`make run` and the tests start their own ZooKeeper this way (its jars from the `zookeeper`
apt package, no init scripts), each with its own zoo.cfg.
"""

from __future__ import annotations

from pathlib import Path

JAVA_DIR = Path("/usr/share/java")
ZOOKEEPER_JARS = (
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "netty-all.jar",
    "metrics-core.jar",
    "commons-cli.jar",
    "snappy-java.jar",
)


def server_command(config: Path, max_heap: str) -> list[str]:
    """java running a standalone ZooKeeper server on `config` (a zoo.cfg)."""
    classpath = ":".join(str(JAVA_DIR / jar) for jar in ZOOKEEPER_JARS)
    return [
        "java",
        f"-Xmx{max_heap}",
        "-cp",
        classpath,
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        str(config),
    ]
