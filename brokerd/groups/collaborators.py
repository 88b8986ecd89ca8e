"""What the group coordinator uses from its peers beyond what every internal-topic
coordinator uses (brokerd/coordinator_partitions.py), as structural types."""

from __future__ import annotations

from typing import Protocol


class FailurePoint(Protocol):
    async def reached(self, module: str, point: str) -> None: ...
