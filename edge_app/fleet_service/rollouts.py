"""Configuration rollouts: a merge patch for one device, a list or all, and its fate per device.

Each device gets the next version of its own (one above the last this fleet issued to it) as
the retained ``R/config/desired``; a report claiming any other version moves nothing
(:func:`edge_app.fleet_service.ingest_batch._settle`). Only the newest retained message reaches an
appliance that was away, so the patch sent with version N is the composition of every patch of
that device still pending below N and the new one: a device that missed two rollouts applies
both when it returns, in order. Merge patches are idempotent, so sending a patch again to a
device that did apply it changes nothing. A report of N settles every pending version up to N
(:func:`edge_app.fleet_service.ingest_batch._settle`); a rejected patch is never sent again.

A version no report answers within ``rollouts.timeout_s`` is marked ``timed_out`` with the
reason (a late report still settles it). :meth:`Rollouts.reset` is the operator's way to set a
device's version, for a device reset on its side or a database started anew.

Epochs: each device's versions count within an epoch of the fleet (``devices.desired_epoch``, 32
random hexadecimal digits, picked at the first rollout to it and anew at every reset). Every
desired message carries the epoch and the time it was issued, under the signature where the
device has a key, so an appliance never acts on a captured message of an earlier epoch again
(``edge_app.fleet_agent.desired.epoch``). A pending version is published again, issued anew, by
:meth:`Rollouts.republish` when the retained message on the broker is found cleared or replaced
(``edge_app.fleet_service.desired_watch``).
"""
from __future__ import annotations

import copy
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from edge_app.config.model_patch import ARTIFACT_PREFIX
from edge_app.fleet_service.db import Connection
from edge_app.fleet_service.messages import MAX_INT, desired_topic
from edge_app.fleet_service.model_state import stored_models_state
from edge_app.fleet_protocol.desired_signature import EPOCH_KEY, ISSUED_KEY, SIGNATURE_KEY, sign_desired

logger = logging.getLogger(__name__)

Publish = Callable[[str, bytes], None]


class UnknownDevices(LookupError):
    def __init__(self, device_ids: Sequence[str]):
        super().__init__(", ".join(device_ids))
        self.device_ids = list(device_ids)


class NoModelDevices(LookupError):
    """A model rollout to "all" when no device reports running that fleet model."""

    def __init__(self, name: str):
        super().__init__(f"no device reports the fleet model {name!r} in its models_state: "
                         "nothing to roll out to (name devices to send it anyway)")
        self.name = name


def runs_model(models_state: Optional[str], name: str) -> bool:
    """Whether a device's stored ``models_state`` (checked JSON, or NULL) has fleet model ``name``."""
    return name in stored_models_state(models_state)


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


def model_rollout_patch(name: str, version: str) -> Dict[str, Any]:
    """The desired patch of a rollout of fleet model ``name`` ``version``.

    ``models`` as an object addresses the device's model whose ``artifact.name`` is ``name``,
    whether that is ``model`` or an entry of ``models`` (a merge patch cannot address a list
    entry; the appliance resolves the address, ``edge_app.config.model_patch``). Only the
    version is set: the device's broker allow-list permits nothing else of an artifact.
    """
    return {"models": {f"{ARTIFACT_PREFIX}{name}": {"artifact": {"version": version}}}}


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

    def start(self, targets: Union[str, List[str]], patch: Dict[str, Any],
              model: Optional[Tuple[str, str]] = None) -> Rollout:
        """Store and publish a rollout of ``patch`` to ``targets`` ("all" or device ids).

        ``model`` (name, version) marks a rollout of a model version, whose per-device state the
        rollout then shows from the devices' ``models_state``. For it "all" means every device
        whose last ``models_state`` names that model (the others would only refuse it), and
        :class:`NoModelDevices` when there is none; a list is taken as it is.
        """
        now = self._clock()
        rollout_id = uuid.uuid4().hex
        patch_text = json.dumps(patch)
        with self._lock:
            with self._conn.transaction() as conn:
                rows = conn.query("SELECT device_id, desired_version, models_state, desired_epoch FROM devices "
                                  "ORDER BY device_id")
                known = {dev: int(issued) for dev, issued, _models, _epoch in rows}
                epochs = {dev: epoch for dev, _issued, _models, epoch in rows}
                if targets == "all" and model is not None:
                    chosen = [dev for dev, _issued, models, _epoch in rows if runs_model(models, model[0])]
                    if not chosen:
                        raise NoModelDevices(model[0])
                elif targets == "all":
                    chosen = sorted(known)
                else:
                    missing = [dev for dev in targets if dev not in known]
                    if missing:
                        raise UnknownDevices(missing)
                    chosen = list(dict.fromkeys(targets))
                pending = self._pending_patches(conn, set(chosen))
                versions = {dev: known[dev] + 1 for dev in chosen}
                conn.execute("INSERT INTO rollouts (rollout_id, created_at, target, patch, model_name, model_version) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (rollout_id, now, json.dumps(targets), patch_text,
                                                           *(model or (None, None))))
                conn.executemany(
                    "INSERT INTO rollout_devices (rollout_id, device_id, version, patch, status, errors, updated_at) "
                    "VALUES (?, ?, ?, ?, 'pending', NULL, ?)",
                    [(rollout_id, dev, versions[dev], patch_text, now) for dev in chosen])
                conn.executemany("UPDATE devices SET desired_version = ? WHERE device_id = ?",
                                 [(versions[dev], dev) for dev in chosen])
                fresh = {dev: uuid.uuid4().hex for dev in chosen if not epochs.get(dev)}
                conn.executemany("UPDATE devices SET desired_epoch = ? WHERE device_id = ?",
                                 [(epoch, dev) for dev, epoch in fresh.items()])
                epochs.update(fresh)
            # Published after the commit: a report can only ever answer a stored version.
            for dev in chosen:
                self._publish_desired(dev, epochs[dev], versions[dev], pending.get(dev, []) + [patch])
        logger.info("rollout %s: version(s) %s to %d device(s)", rollout_id,
                    sorted(set(versions.values())) if len(set(versions.values())) <= 5 else "…", len(chosen))
        return Rollout(rollout_id, versions)

    def _publish_desired(self, dev: str, epoch: str, version: int, patches: List[Any]) -> None:
        """Publish ``version`` of ``dev``: ``patches`` (oldest first) composed into one, issued now."""
        composed: Any = patches[0]
        for later in patches[1:]:
            composed = compose_patches(composed, later)
        issued_ms = int(self._clock() * 1000)
        message: Dict[str, Any] = {"version": version, "patch": composed, EPOCH_KEY: epoch, ISSUED_KEY: issued_ms}
        key = self._desired_keys().get(dev)
        if key is not None:  # the appliance's fleet.desired_key: it acts only on what this signs
            message[SIGNATURE_KEY] = sign_desired(key.get_secret_value(), dev, epoch, issued_ms, version, composed)
        self._publish(desired_topic(self._prefix, dev), json.dumps(message).encode("utf-8"))

    def republish(self, device_id: str) -> bool:
        """Publish ``device_id``'s pending version again, issued now; False when nothing is pending for it."""
        with self._lock:
            with self._conn.reading() as conn:
                row = conn.query_one("SELECT desired_version, desired_epoch FROM devices WHERE device_id = ?",
                                     (device_id,))
                pending = self._pending_patches(conn, {device_id}, device_id).get(device_id, [])
            if row is None or not row[1] or not pending:
                return False
            self._publish_desired(device_id, row[1], int(row[0]), pending)
        logger.warning("the desired configuration of %s (version %d, pending) was cleared or replaced on the broker; "
                       "published it again", device_id, int(row[0]))
        return True

    @staticmethod
    def _pending_patches(conn: Connection, devices: set, only: Optional[str] = None) -> Dict[str, List[Any]]:
        """Per device, the patches still unanswered (pending or timed out) above what it reported, oldest first."""
        rows = conn.query(
            "SELECT rd.device_id, rd.patch FROM rollout_devices rd JOIN devices d ON d.device_id = rd.device_id "
            "WHERE rd.status IN ('pending', 'timed_out') AND rd.version > d.reported_version "
            + ("AND rd.device_id = ? " if only is not None else "") + "ORDER BY rd.device_id, rd.version",
            (only,) if only is not None else ())
        found: Dict[str, List[Any]] = {}
        for dev, patch in rows:
            if dev in devices:
                found.setdefault(dev, []).append(json.loads(patch))
        return found

    def expire(self, timeout_s: float) -> int:
        """Mark versions pending for longer than ``timeout_s`` as timed out, each with its reason."""
        now = self._clock()
        with self._lock:
            with self._conn.transaction() as conn:
                rows = conn.query(
                    "SELECT rd.rollout_id, rd.device_id, rd.version, d.state, d.reported_version, d.unissued_version "
                    "FROM rollout_devices rd JOIN devices d ON d.device_id = rd.device_id "
                    "WHERE rd.status = 'pending' AND rd.updated_at < ?", (now - timeout_s,))
                conn.executemany(
                    "UPDATE rollout_devices SET status = 'timed_out', errors = ?, updated_at = ? "
                    "WHERE rollout_id = ? AND device_id = ? AND status = 'pending'",
                    [(json.dumps([{"loc": "version", "msg": _timeout_reason(dev, int(v), timeout_s, state, int(r),
                                                                             u)}]), now, rid, dev)
                     for rid, dev, v, state, r, u in rows])
        if rows:
            logger.warning("%d configuration version(s) timed out after %.0f s without a report", len(rows), timeout_s)
        return len(rows)

    def reset(self, device_id: str, version: int) -> int:
        """Set ``device_id``'s version to ``version`` (issued and reported); returns how many versions were cancelled.

        What was pending or timed out for it is cancelled, its retained desired message is
        deleted, so a device reset on its side is not handed an old version again, and a new epoch
        begins for it: nothing signed before can be replayed to it as new.
        """
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version < MAX_INT:
            raise ValueError("version must be an integer from 0 to 2^53 - 1")
        now = self._clock()
        reason = json.dumps([{"loc": "version", "msg": f"cancelled: the device's version was reset to {version}"}])
        with self._lock:
            with self._conn.transaction() as conn:
                if conn.query_one("SELECT 1 FROM devices WHERE device_id = ?", (device_id,)) is None:
                    raise UnknownDevices([device_id])
                cancelled = conn.query_one(
                    "SELECT COUNT(*) FROM rollout_devices WHERE device_id = ? AND status IN ('pending', 'timed_out')",
                    (device_id,))
                conn.execute("UPDATE rollout_devices SET status = 'cancelled', errors = ?, updated_at = ? "
                             "WHERE device_id = ? AND status IN ('pending', 'timed_out')", (reason, now, device_id))
                conn.execute("UPDATE devices SET desired_version = ?, reported_version = ?, reported_status = NULL, "
                             "reported_errors = NULL, unissued_version = NULL, unissued_ts = NULL, desired_epoch = ? "
                             "WHERE device_id = ?", (version, version, uuid.uuid4().hex, device_id))
            self._publish(desired_topic(self._prefix, device_id), b"")
        logger.warning("the configuration version of %s was reset to %d", device_id, version)
        return int(cancelled[0]) if cancelled else 0


def _timeout_reason(device_id: str, version: int, timeout_s: float, state: str, reported: int,
                    unissued: Optional[int]) -> str:
    reason = f"no report of version {version} within {timeout_s:g} s"
    if unissued is not None and unissued >= version:
        return (f"{reason}: the device reported version {unissued}, which this fleet never issued, and ignores "
                f"lower versions; if the device really is at {unissued}, reset it with "
                f"POST /api/v1/devices/{device_id}/config/reset {{\"version\": {unissued}}}")
    if state != "online":
        return f"{reason}: the device is {state}"
    return f"{reason}: the device last reported version {reported}"
