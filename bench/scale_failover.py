"""Scale, the controller's big operations only: bench/scale.py's cluster cases without its
produce and Metadata cases (a run of ~3 minutes at 10,000 partitions instead of ~5.5).

The same three brokers and ZooKeeper as bench/scale.py (tests/cluster's `Cluster`: a 4 s
ZooKeeper session), one topic of BENCH_SCALE_PARTITIONS partitions (default 1,000; `--quick`
300) at RF 3, then, as scale.py measures them:

* creation: CreateTopics until every partition serves (printed only);
* controlled shutdown: SIGTERM of a broker that is not the controller until the controller
  answered that it leads none ("controlled shutdown succeeded" in its log);
* restart of that broker until it is back in every ISR;
* controller failover: kill -9 of the controller until a new controller has given every
  partition a live leader (its 4 s ZooKeeper session expiry included).

BENCH_SCALE_LOGS=<dir> keeps the brokers' logs there.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from bench import Result, say, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run(quick: bool) -> list[Result]:
    from confluent_kafka.admin import AdminClient

    from bench.replication import _Dirs
    from bench.scale import _back_in_every_isr, _create, _serving, timed_wait
    from tests.cluster.conftest import SESSION_TIMEOUT_MS, Cluster
    from tests.harness import ZooKeeper

    wide = int(os.environ.get("BENCH_SCALE_PARTITIONS") or (300 if quick else 1000))
    results = []
    with scratch_dir("scale-failover") as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        cluster = None
        try:
            cluster = Cluster(zookeeper, _Dirs(base)).start()
            admin = AdminClient(
                {"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 300000}
            )
            created_s = _create(admin, "scale-wide", wide)
            say(f"scale_failover: {wide} partitions RF 3 serving after {created_s:.2f} s")

            meta = admin.list_topics(topic="scale-wide", timeout=10)
            stopping_id = next(b for b in cluster.brokers if b != meta.controller_id)
            led = sum(
                1 for p in meta.topics["scale-wide"].partitions.values() if p.leader == stopping_id
            )
            stopping = cluster.brokers[stopping_id]
            already = len(stopping.output)
            stopping.process.send_signal(signal.SIGTERM)
            shutdown_s = timed_wait(
                lambda: "controlled shutdown succeeded" in stopping.output[already:]
            )
            stopping.terminate(120)
            say(
                f"scale_failover: controlled shutdown of broker {stopping_id} leading {led} "
                f"partitions: leaders moved after {shutdown_s:.2f} s"
            )
            results.append(
                Result(
                    "scale_failover",
                    f"controlled shutdown, broker leading {led} of {wide} partitions",
                    "s",
                    "SIGTERM -> all leaders moved",
                    shutdown_s,
                    "Kafka 1.1, 10,000 partitions",
                    3.0,
                    shutdown_s / 3.0,
                    note="aim (issue 15): 5 s",
                )
            )

            restarted_at = time.monotonic()
            stopping.start(600)
            started_s = time.monotonic() - restarted_at
            timed_wait(lambda: _back_in_every_isr(admin, "scale-wide", stopping_id), 900)
            restart_s = time.monotonic() - restarted_at
            say(
                f"scale_failover: restart of broker {stopping_id}: serving after "
                f"{started_s:.2f} s, back in every ISR after {restart_s:.2f} s"
            )
            results.append(
                Result(
                    "scale_failover",
                    "restart of a broker until it is back in every ISR",
                    "s",
                    "start -> in every ISR",
                    restart_s,
                    "aim (issue 15)",
                    30.0,
                    restart_s / 30.0,
                    aim_at_most=1.0,
                    note=f"process serving after {started_s:.1f} s",
                )
            )

            controller = admin.list_topics(timeout=10).controller_id
            killed_at = time.monotonic()
            cluster.brokers[controller].kill()
            timed_wait(
                lambda: (
                    _serving(admin, "scale-wide", wide, excluded=controller)
                    and admin.list_topics(timeout=10).controller_id not in (controller, -1)
                )
            )
            failover_s = time.monotonic() - killed_at
            session_s = SESSION_TIMEOUT_MS / 1000
            say(
                f"scale_failover: kill -9 of controller {controller}: all {wide} serving after "
                f"{failover_s:.2f} s"
            )
            results.append(
                Result(
                    "scale_failover",
                    f"kill -9 of the controller until all {wide} partitions serve",
                    "s",
                    "kill -9 -> all serving",
                    failover_s,
                    "ZooKeeper session timeout",
                    session_s,
                    failover_s / session_s,
                    aim_at_most=1.5,
                )
            )
        finally:
            if cluster is not None:
                cluster.kill_all()
            zookeeper.stop()
            keep = os.environ.get("BENCH_SCALE_LOGS")
            if keep:  # the brokers' logs, for the timeline of each case
                for log_path in base.glob("*/broker.log"):
                    Path(keep).mkdir(parents=True, exist_ok=True)
                    shutil.copy(log_path, Path(keep) / f"{log_path.parent.name}.log")
    return results
