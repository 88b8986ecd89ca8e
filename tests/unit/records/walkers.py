"""The two implementations of walk_records (and record_facts), for tests that must hold
for both.

The compiled one is imported directly (not through validation's choice), so a build of an
older _walk.pyx is tested too; test_record_walk_compiled checks that the broker uses it.
"""

import pytest

from brokerd.records.validation import walk_records_python

try:
    from brokerd.records._walk import record_facts as record_facts_compiled
    from brokerd.records._walk import walk_records as walk_records_compiled
except ImportError:  # not built: test_record_walk_compiled fails, these tests skip
    walk_records_compiled = record_facts_compiled = None

NOT_BUILT = "brokerd.records._walk is not built (platform/setup builds it)"

WALKERS = [
    pytest.param(walk_records_python, id="python"),
    pytest.param(
        walk_records_compiled,
        id="compiled",
        marks=pytest.mark.skipif(walk_records_compiled is None, reason=NOT_BUILT),
    ),
]
