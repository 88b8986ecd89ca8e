"""Build brokerd's compiled modules in place (Cython), as platform/setup runs it.

    .venv/bin/python platform/build_extensions.py

Idempotent: Cython regenerates a module's C file only when its .pyx changed, and the C
compiler runs only when that C file is newer than the built module. Generated C and object
files go under build/ext/ (git-ignored); the built .so lands beside its .pyx (git-ignored).
Each module is stamped with the sha256 of the .pyx it was built from, so brokerd can refuse
a build of another version (validation.py falls back to the pure-Python walk, and says so).
Exits non-zero when a module does not build; brokerd then runs on the Python fallback.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = Path("build") / "ext"  # relative to ROOT, where this runs

# (module, source, the C macro its source's sha256 goes into)
MODULES = [
    ("brokerd.records._walk", "brokerd/records/_walk.pyx", "BROKERD_WALK_SOURCE_SHA256"),
]


def main() -> int:
    os.chdir(ROOT)
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
    except ImportError as exc:
        print(f"build_extensions: {exc} (pip install -r requirements.txt)", file=sys.stderr)
        return 1

    extensions = []
    for name, source, macro in MODULES:
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()
        extensions.append(
            Extension(
                name,
                [source],
                define_macros=[(macro, f'"{digest}"')],
            )
        )
    modules = cythonize(extensions, build_dir=str(BUILD_DIR / "c"), quiet=True)
    distribution = Distribution({"name": "brokerd-extensions", "ext_modules": modules})
    build_ext = distribution.get_command_obj("build_ext")
    build_ext.inplace = True
    build_ext.build_temp = str(BUILD_DIR / "temp")
    distribution.run_command("build_ext")
    return 0


if __name__ == "__main__":
    sys.exit(main())
