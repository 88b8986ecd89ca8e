"""brokerd: a Kafka-compatible broker that stores data in Kafka's on-disk format."""
