"""Durable topic partitions: append-only logs of Kafka v2 record batches.

May import: `coordinator.wire` and the root modules (`coordinator.errors`).
"""
