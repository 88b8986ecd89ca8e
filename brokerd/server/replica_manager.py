"""Moved to brokerd.replication.replica_manager; kept so existing imports still work."""

from brokerd.replication.replica_manager import LeaderPartition, ReplicaManager

__all__ = ["LeaderPartition", "ReplicaManager"]
