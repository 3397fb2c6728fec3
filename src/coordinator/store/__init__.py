"""Durable key-value records for the group coordinator (group metadata, committed offsets)."""

from coordinator.store.base import RecordStore, StoredRecord, StoreError
from coordinator.store.memory import MemoryStore
from coordinator.store.sqlite import SqliteStore

__all__ = ["MemoryStore", "RecordStore", "SqliteStore", "StoreError", "StoredRecord"]
