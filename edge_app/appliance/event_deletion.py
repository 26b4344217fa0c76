"""``DELETE /api/v1/events/<id>`` on the appliance: the event store's delete, or nothing to delete
without a store (``edge_app.reporting.protocol.EventDeletion``)."""
from __future__ import annotations

from typing import Optional

from edge_app.events.store import EventStore


class StoredEventDeletion:
    """Deletes stored events; without a store (events off) every event is unknown."""

    def __init__(self, store: Optional[EventStore]) -> None:
        self._store = store

    def delete_event(self, event_id: str) -> bool:
        return False if self._store is None else self._store.delete(event_id)
