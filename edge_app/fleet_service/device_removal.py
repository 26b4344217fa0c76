"""Devices leaving the inventory: removed by the operator, or forgotten when they never were online.

Anyone who can publish under the topic prefix can make up device ids (``devices.allow`` and
``devices.max`` bound how many are kept), so the inventory needs a way out. ``DELETE
/api/v1/devices/<id>`` (the admin token) removes a device with everything stored of it: its
cameras, counts, events, health and the per-device state of its rollouts. A device whose status
never said ``online`` (a real appliance announces itself at every connect) is forgotten
``devices.forget_never_online_after_s`` after it was first heard of. A device that goes on
publishing is admitted again like a new one, within ``devices.allow`` and ``devices.max``.
"""
from __future__ import annotations

import logging
from typing import List

from edge_app.fleet_service.db import Connection

logger = logging.getLogger(__name__)

#: Every table keyed by device id; devices last, so a crash in between leaves nothing orphaned.
_DEVICE_TABLES = ("cameras", "counts", "events", "health", "rollout_devices", "devices")


def _delete(conn: Connection, device_ids: List[str]) -> None:
    for table in _DEVICE_TABLES:
        conn.executemany(f"DELETE FROM {table} WHERE device_id = ?", [(dev,) for dev in device_ids])


def remove_device(conn: Connection, device_id: str) -> bool:
    """Remove ``device_id`` and everything stored of it; False when there is no such device."""
    with conn.transaction():
        if conn.query_one("SELECT 1 FROM devices WHERE device_id = ?", (device_id,)) is None:
            return False
        _delete(conn, [device_id])
    logger.warning("device %s removed from the fleet with everything stored of it", device_id)
    return True


def forget_never_online(conn: Connection, first_seen_before_s: float) -> List[str]:
    """Remove the devices first heard of before ``first_seen_before_s`` that never said online; their ids."""
    with conn.transaction():
        ids = [dev for (dev,) in conn.query(
            "SELECT device_id FROM devices WHERE online_at IS NULL AND first_seen < ?", (first_seen_before_s,))]
        _delete(conn, ids)
    if ids:
        logger.warning("forgot %d device(s) never online since they were first heard of (%s%s): "
                       "devices.forget_never_online_after_s", len(ids), ", ".join(ids[:10]),
                       ", ..." if len(ids) > 10 else "")
    return ids


__all__ = ["forget_never_online", "remove_device"]
