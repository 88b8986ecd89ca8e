"""Scale, the controller's big operations only: bench/scale.py's cluster cases without its
produce and Metadata cases (a run of ~3 minutes at 10,000 partitions instead of ~5.5).

The same three brokers and ZooKeeper as bench/scale.py (tests/cluster's `Cluster`: a 4 s
ZooKeeper session, Kafka's default 30 s replica lag), one topic of BENCH_SCALE_PARTITIONS partitions (default 1,000; `--quick`
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
import sys
from pathlib import Path

from bench import Result, say

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run(quick: bool) -> list[Result]:
    from bench.scale import _create, controller_cases, three_brokers

    wide = int(os.environ.get("BENCH_SCALE_PARTITIONS") or (300 if quick else 1000))
    with three_brokers("scale-failover") as (_base, cluster, admin):
        created_s = _create(admin, "scale-wide", wide)
        say(f"scale_failover: {wide} partitions RF 3 serving after {created_s:.2f} s")
        return controller_cases(cluster, admin, "scale_failover", wide, wide)
