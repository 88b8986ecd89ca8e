"""Small helpers the broker's packages share (no broker state, no Kafka concepts)."""
