"""The partition log: segments, indexes, recovery, retention, compaction, checkpoints."""
