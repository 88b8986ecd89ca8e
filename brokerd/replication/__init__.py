"""Replication: partitions as leader or follower, the ISR, the high watermark, follower
fetchers, and the purgatories where acks=all produces and long-polling fetches wait."""
