import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((SHARED / "reference" / "vectors.json").read_text())
