"""Moved to brokerd.replication.purgatory; kept so existing imports still work."""

from brokerd.replication.purgatory import FetchPurgatory, ProducePurgatory

__all__ = ["FetchPurgatory", "ProducePurgatory"]
