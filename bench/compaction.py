"""Compaction throughput: clean a log of keyed records and print records/s and peak memory.

    .venv/bin/python bench/compaction.py                # 1M records, 100k keys
    .venv/bin/python bench/compaction.py --records 50000 --keys 5000   # a quick check

Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from brokerd.config import LogConfig  # noqa: E402
from brokerd.log.cleaner_manager import LogCleanerManager  # noqa: E402
from brokerd.log.recovery import load_log  # noqa: E402
from brokerd.records import compression  # noqa: E402
from brokerd.records.batch import SimpleRecord, build_batch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=100, help="records per batch")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--codec", choices=sorted(compression.NAMES.values()), default="none")
    parser.add_argument("--segment-bytes", type=int, default=16 << 20)
    parser.add_argument("--dedupe-buffer", type=int, default=32 << 20, help="offset map bytes")
    parser.add_argument(
        "--trace-memory", action="store_true", help="tracemalloc peak (slows cleaning down)"
    )
    args = parser.parse_args()
    codec = {name: code for code, name in compression.NAMES.items()}[args.codec]

    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        config = LogConfig().with_overrides(
            cleanup_policy=("compact",), segment_bytes=args.segment_bytes
        )
        log = load_log(Path(tmp) / "bench-0", config, had_clean_shutdown=True)
        rng = random.Random(42)
        value = b"v" * args.value_bytes
        started = time.perf_counter()
        written = 0
        while written < args.records:
            n = min(args.batch, args.records - written)
            records = [
                SimpleRecord(value, b"key-%08d" % rng.randrange(args.keys), (), 1_000_000)
                for _ in range(n)
            ]
            log.append_as_leader(build_batch(records, compression_type=codec), leader_epoch=0)
            written += n
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        append_s = time.perf_counter() - started
        size_before = log.size

        if args.trace_memory:
            tracemalloc.start()
        manager = LogCleanerManager(dedupe_buffer_size=args.dedupe_buffer)
        started = time.perf_counter()
        passes = []
        while True:
            report = manager.clean_log(log)
            if report.skipped:
                break
            passes.append(report)
        clean_s = time.perf_counter() - started
        peak_traced = tracemalloc.get_traced_memory()[1] if args.trace_memory else 0
        tracemalloc.stop()
        max_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        read = sum(p.records_read for p in passes)
        kept = passes[-1].records_kept if passes else 0
        print(f"records appended      {args.records:,} ({args.keys:,} keys, codec {args.codec})")
        print(f"append time           {append_s:.2f} s")
        print(f"cleaning passes       {len(passes)} (partial: {sum(p.partial for p in passes)})")
        print(f"records read/kept     {read:,} / {kept:,} (last pass)")
        print(f"bytes before/after    {size_before:,} / {log.size:,}")
        print(f"clean time            {clean_s:.2f} s")
        print(f"records/s             {args.records / clean_s:,.0f}")
        print(f"MB/s                  {size_before / clean_s / 1e6:.1f}")
        print(f"offset map            {args.dedupe_buffer / 1e6:.1f} MB budget")
        if args.trace_memory:
            print(f"peak traced memory    {peak_traced / 1e6:.1f} MB (cleaning, tracemalloc)")
        print(f"max RSS               {max_rss_kb / 1e3:.1f} MB (process)")
        log.close()


if __name__ == "__main__":
    main()
