"""Durable topic partitions: append-only logs of Kafka v2 record batches."""
