"""The broker's HTTP admin API (`/v1/...`) and Prometheus `/metrics` (docs/admin-api.md)."""

from .metrics import BrokerMetrics
from .server import AdminServer

__all__ = ["AdminServer", "BrokerMetrics"]
