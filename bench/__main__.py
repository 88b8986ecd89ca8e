"""Run every benchmark module in bench/: `python -m bench [--quick] [--only NAME ...]`."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
import traceback
from types import ModuleType

from . import SCRATCH_DIR_ENV, Result, say


def discover() -> dict[str, ModuleType]:
    """Modules of this package that define run(quick), by name; `_`-prefixed are helpers."""
    package = sys.modules[__package__]
    found = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        if callable(getattr(module, "run", None)):
            found[info.name] = module
    return found


def format_table(results: list[Result]) -> str:
    lines = [
        "| benchmark | case | brokerd | peer | unit | ratio | aim | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.benchmark} | {r.case} | {r.measured:,.1f} ({r.measured_label}) | "
            f"{r.peer:,.1f} ({r.peer_label}) | {r.unit} | {r.ratio:.2f} | {r.aim} | "
            f"{'yes' if r.meets_aim else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (under a minute)")
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run only this module (repeatable)"
    )
    parser.add_argument("--list", action="store_true", help="list the benchmark modules")
    parser.add_argument(
        "--scratch",
        metavar="DIR",
        help=f"directory for benchmark files (default ${SCRATCH_DIR_ENV} or the temp dir)",
    )
    args = parser.parse_args(argv)
    if args.scratch:
        os.environ[SCRATCH_DIR_ENV] = args.scratch
    modules = discover()
    if args.list:
        print("\n".join(modules))
        return 0
    if args.only:
        unknown = sorted(set(args.only) - set(modules))
        if unknown:
            parser.error(f"unknown benchmark(s) {', '.join(unknown)}; have {', '.join(modules)}")
        modules = {name: modules[name] for name in args.only}

    results: list[Result] = []
    failed: list[str] = []
    started = time.perf_counter()
    for name, module in modules.items():
        module_started = time.perf_counter()
        try:
            results.extend(module.run(args.quick))
        except Exception:  # one broken benchmark must not hide the others' results
            failed.append(name)
            traceback.print_exc()
        say(f"[{name}: {time.perf_counter() - module_started:.1f} s]\n")

    mode = "quick" if args.quick else "full"
    say(f"Summary ({mode} run, {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs):")
    say(format_table(results))
    say("Ratios compare brokerd with a peer measured in the same run; no speed is asserted.")
    if failed:
        say(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
