"""Configuration rollouts: a merge patch for one device, a list or all, and its fate per device.

Each device gets the next version of its own (above both what was desired and what it last
reported) as the retained ``R/config/desired``. Only the newest retained message reaches an
appliance that was away, so the patch sent with version N is the composition of every patch of
that device still pending below N and the new one: a device that missed two rollouts applies
both when it returns, in order. Merge patches are idempotent, so sending a patch again to a
device that did apply it changes nothing. A report of N settles every pending version up to N
(:func:`edge_app.fleet.ingest_batch._settle`); a rejected patch is never sent again.
"""
from __future__ import annotations

import copy
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Sequence, Union

from edge_app.fleet.db import Connection
from edge_app.fleet.messages import desired_topic
from edge_app.mqtt.desired_signature import SIGNATURE_KEY, sign_desired

logger = logging.getLogger(__name__)

Publish = Callable[[str, bytes], None]


class UnknownDevices(LookupError):
    def __init__(self, device_ids: Sequence[str]):
        super().__init__(", ".join(device_ids))
        self.device_ids = list(device_ids)


def compose_patches(first: Any, second: Any) -> Any:
    """One merge patch doing what ``first`` then ``second`` do (RFC 7396 is idempotent and nests)."""
    if not isinstance(first, dict) or not isinstance(second, dict):
        return copy.deepcopy(second)
    result = copy.deepcopy(first)
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = compose_patches(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


@dataclass(frozen=True)
class Rollout:
    rollout_id: str
    versions: Dict[str, int]


class Rollouts:
    """Creates rollouts on ``conn`` and publishes them through ``publish(topic, payload)``."""

    def __init__(self, conn: Connection, prefix: str, publish: Publish, clock: Callable[[], float] = time.time,
                 desired_keys: Callable[[], Mapping[str, Any]] = dict):
        self._conn = conn
        # device id -> SecretStr key (FleetConfig.desired_keys), read at every rollout
        self._desired_keys = desired_keys
        self._prefix = prefix
        self._publish = publish
        self._clock = clock
        # One rollout at a time: two at once could hand one device the same version twice.
        self._lock = threading.Lock()

    def start(self, targets: Union[str, List[str]], patch: Dict[str, Any]) -> Rollout:
        """Store and publish a rollout of ``patch`` to ``targets`` ("all" or device ids)."""
        now = self._clock()
        rollout_id = uuid.uuid4().hex
        patch_text = json.dumps(patch)
        with self._lock:
            with self._conn.transaction() as conn:
                rows = conn.query("SELECT device_id, desired_version, reported_version FROM devices ORDER BY device_id")
                known = {dev: max(int(d), int(r)) for dev, d, r in rows}
                if targets == "all":
                    chosen = sorted(known)
                else:
                    missing = [dev for dev in targets if dev not in known]
                    if missing:
                        raise UnknownDevices(missing)
                    chosen = list(dict.fromkeys(targets))
                pending = self._pending_patches(conn, set(chosen))
                versions = {dev: known[dev] + 1 for dev in chosen}
                conn.execute("INSERT INTO rollouts (rollout_id, created_at, target, patch) VALUES (?, ?, ?, ?)",
                             (rollout_id, now, json.dumps(targets), patch_text))
                conn.executemany(
                    "INSERT INTO rollout_devices (rollout_id, device_id, version, patch, status, errors, updated_at) "
                    "VALUES (?, ?, ?, ?, 'pending', NULL, ?)",
                    [(rollout_id, dev, versions[dev], patch_text, now) for dev in chosen])
                conn.executemany("UPDATE devices SET desired_version = ? WHERE device_id = ?",
                                 [(versions[dev], dev) for dev in chosen])
            # Published after the commit: a report can only ever answer a stored version.
            for dev in chosen:
                composed: Any = patch
                earlier = pending.get(dev, [])
                if earlier:
                    composed = earlier[0]
                    for later in earlier[1:] + [patch]:
                        composed = compose_patches(composed, later)
                message: Dict[str, Any] = {"version": versions[dev], "patch": composed}
                key = self._desired_keys().get(dev)
                if key is not None:  # the appliance's fleet.desired_key: it acts only on what this signs
                    message[SIGNATURE_KEY] = sign_desired(key.get_secret_value(), dev, versions[dev], composed)
                body = json.dumps(message).encode("utf-8")
                self._publish(desired_topic(self._prefix, dev), body)
        logger.info("rollout %s: version(s) %s to %d device(s)", rollout_id,
                    sorted(set(versions.values())) if len(set(versions.values())) <= 5 else "…", len(chosen))
        return Rollout(rollout_id, versions)

    @staticmethod
    def _pending_patches(conn: Connection, devices: set) -> Dict[str, List[Any]]:
        """Per device, the patches still pending above what it reported, oldest first."""
        rows = conn.query(
            "SELECT rd.device_id, rd.patch FROM rollout_devices rd JOIN devices d ON d.device_id = rd.device_id "
            "WHERE rd.status = 'pending' AND rd.version > d.reported_version ORDER BY rd.device_id, rd.version")
        found: Dict[str, List[Any]] = {}
        for dev, patch in rows:
            if dev in devices:
                found.setdefault(dev, []).append(json.loads(patch))
        return found
