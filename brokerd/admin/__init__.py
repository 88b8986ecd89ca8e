"""The broker's HTTP admin API (`/v1/...`) and Prometheus `/metrics` (docs/admin-api.md)."""

from .context import AdminContext
from .metrics import BrokerMetrics
from .routes import ROUTES
from .server import AdminServer
from .state_metrics import BrokerStateCollector

__all__ = ["ROUTES", "AdminContext", "AdminServer", "BrokerMetrics", "BrokerStateCollector"]
