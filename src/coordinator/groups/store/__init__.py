"""Durable key-value records for the group coordinator (group metadata, committed offsets)."""

from coordinator.groups.store.base import RecordStore, StoredRecord, StoreError
from coordinator.groups.store.memory import MemoryStore
from coordinator.groups.store.sqlite import SqliteStore

__all__ = ["MemoryStore", "RecordStore", "SqliteStore", "StoreError", "StoredRecord"]
