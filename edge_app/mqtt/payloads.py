"""Builders for the MQTT payloads of docs/mqtt.md and their JSON encoding.

Each builder returns a plain JSON-serialisable ``dict`` with exactly the field names of the
contract, so the REST API can hand out the very same object it published
(``GET /api/v1/cameras/<id>/detections``).
"""
from __future__ import annotations

import json
import math
import time
from typing import Any, Iterable, Mapping, Optional, Union

from edge_app.capture.state import StreamState
from edge_app.events.zone_stats import ZoneStats
from edge_app.reporting.protocol import AnalysedFrame, StatusReport
from edge_app.config.redact import mask_secrets
from edge_app.track.speed import SpeedReading

DEVICE_STATES = ("online", "offline")
#: camera states (docs/mqtt.md), in the order the state machine defines them
CAMERA_STATES = tuple(state.value for state in StreamState)


def _now_s(ts: Optional[float]) -> float:
    return float(time.time() if ts is None else ts)


def status_payload(state: str, device_id: str, version: str, ts: Optional[float] = None) -> dict:
    """``R/status``: ``{"state": "online"|"offline", "device_id", "version", "ts"}``."""
    if state not in DEVICE_STATES:
        raise ValueError(f"device state must be one of {DEVICE_STATES}, got {state!r}")
    return {"state": state, "device_id": device_id, "version": version, "ts": _now_s(ts)}


def camera_state_payload(state: str, error: Optional[str] = None, ts: Optional[float] = None) -> dict:
    """``R/cameras/<id>/state``: ``{"state", "ts", "error": null | "..."}``."""
    if state not in CAMERA_STATES:
        raise ValueError(f"camera state must be one of {CAMERA_STATES}, got {state!r}")
    return {"state": state, "ts": _now_s(ts), "error": None if error is None else mask_secrets(str(error))}


def detection_entry(class_id: int, label: str, confidence: float, bbox: Iterable[float]) -> dict:
    """One element of the ``detections`` list: ``{"class_id", "label", "confidence", "bbox"}``."""
    box = [float(v) for v in bbox]
    if len(box) != 4:
        raise ValueError(f"bbox must be [x1, y1, x2, y2], got {len(box)} values")
    return {"class_id": int(class_id), "label": str(label), "confidence": float(confidence), "bbox": box}


def _detection_list(detections: Any) -> list:
    # Accept the Detections type (it knows its labels) as well as ready-made dicts, so callers
    # holding either do not need a conversion step of their own.
    if hasattr(detections, "to_dicts"):
        return detections.to_dicts()
    return [detection_entry(d["class_id"], d["label"], d["confidence"], d["bbox"]) for d in detections]


def detections_payload(
    device_id: str,
    camera_id: str,
    frame_id: int,
    ts: float,
    width: int,
    height: int,
    latency_ms: float,
    detections: Union[Iterable[Mapping[str, Any]], Any],
    model: str = "default",
) -> dict:
    """``R/cameras/<id>/detections``.

    ``detections`` is an ``edge_app.detect.detections.Detections`` or an iterable of mappings with
    ``class_id``, ``label``, ``confidence`` and ``bbox`` (``[x1, y1, x2, y2]`` in source pixels);
    ``model`` is the name of the model that found them (``cameras[].model``).
    """
    return {
        "device_id": device_id,
        "camera_id": camera_id,
        "frame_id": int(frame_id),
        "ts": float(ts),
        "width": int(width),
        "height": int(height),
        "latency_ms": round(float(latency_ms), 2),
        "model": model,
        "detections": _detection_list(detections),
    }


def detections_payload_for(device_id: str, frame: AnalysedFrame) -> dict:
    """``R/cameras/<id>/detections`` for one analysed frame (also what the API's detections route answers)."""
    height, width = frame.image.shape[:2]
    return detections_payload(device_id=device_id, camera_id=frame.camera_id, frame_id=frame.frame_id, ts=frame.ts,
                              width=width, height=height, latency_ms=frame.latency_ms, detections=frame.detections,
                              model=frame.model)


def review_alerts_payload(count: int, ts: Optional[float] = None) -> dict:
    """``R/cameras/<id>/review/alerts``: ``{"count", "ts"}``, the camera's alerts not yet reviewed."""
    if int(count) < 0:
        raise ValueError(f"a count cannot be negative, got {count}")
    return {"count": int(count), "ts": _now_s(ts)}


def count_payload(count: int, ts: Optional[float] = None, model: str = "default") -> dict:
    """``R/cameras/<id>/objects/<label>`` and ``R/zones/<zone>/<label>``: ``{"count", "ts", "model"}``.

    ``model`` is the camera's model (``cameras[].model``): labels are that model's.
    """
    if int(count) < 0:
        raise ValueError(f"a count cannot be negative, got {count}")
    return {"count": int(count), "ts": _now_s(ts), "model": model}


def zone_stats_payload(stats: ZoneStats, ts: Optional[float] = None, model: str = "default") -> dict:
    """``R/zones/<zone>``: the zone's occupancy now, mean dwell of the last hour, loitering objects and
    whether more than ``max_objects`` are inside (docs/analytics.md, "Dwell and loitering")."""
    return {**stats.to_dict(), "ts": _now_s(ts), "model": model}


def line_count_payload(count_in: int, count_out: int, ts: Optional[float] = None, model: str = "default") -> dict:
    """``R/cameras/<id>/lines/<line>``: ``{"in", "out", "ts", "model"}`` totals (``model``: the camera's)."""
    return {"in": int(count_in), "out": int(count_out), "ts": _now_s(ts), "model": model}


LINE_DIRECTIONS = ("in", "out")


def line_crossing_payload(event_id: Optional[str], track_id: int, label: str, direction: str, ts: Optional[float] = None,
                          model: str = "default", speed: Optional[SpeedReading] = None) -> dict:
    """``R/cameras/<id>/lines/<line>/crossing``; ``event_id`` is null when the object is no event (yet);
    ``model`` is the camera's model, whose label ``label`` is.

    A crossing that completed a line pair's passage (``speed``) adds ``speed_kmh``, ``speed_mph``
    when the pair's unit is mph, ``from_line``, ``max_kmh`` (null: no limit) and ``speed_alert``;
    other crossings keep the keys they always had."""
    if direction not in LINE_DIRECTIONS:
        raise ValueError(f"direction must be one of {LINE_DIRECTIONS}, got {direction!r}")
    body = {"event_id": event_id, "track_id": int(track_id), "label": str(label), "direction": direction,
            "ts": _now_s(ts), "model": model}
    if speed is not None:
        body["speed_kmh"] = round(float(speed.speed_kmh), 1)
        if speed.unit == "mph":
            body["speed_mph"] = round(float(speed.speed_mph), 1)
        body.update({"from_line": speed.from_line, "max_kmh": speed.max_kmh, "speed_alert": speed.over_limit})
    return body


DETECT_ON, DETECT_OFF = "ON", "OFF"
_MAX_COMMAND_BYTES = 16


def detect_state_payload(enabled: bool) -> bytes:
    """``R/cameras/<id>/detect/state``: plain ``ON`` or ``OFF`` (what Home Assistant switches expect)."""
    return (DETECT_ON if enabled else DETECT_OFF).encode("ascii")


def motion_payload(motion: bool) -> bytes:
    """``R/cameras/<id>/motion``: plain ``ON`` or ``OFF`` (a Home Assistant binary sensor's states)."""
    return (DETECT_ON if motion else DETECT_OFF).encode("ascii")


def parse_detect_command(payload: bytes) -> Optional[bool]:
    """``detect/set`` payload to on (True) / off (False); None for anything that is not ON or OFF.

    Case and surrounding whitespace are forgiven; everything else (JSON, long blobs, bytes that
    are no text) is refused rather than guessed at.
    """
    if len(payload) > _MAX_COMMAND_BYTES:
        return None
    try:
        text = bytes(payload).decode("ascii").strip().upper()
    except UnicodeDecodeError:
        return None
    return {DETECT_ON: True, DETECT_OFF: False}.get(text)


def stats_payload(
    device_id: str,
    fps: float,
    latency_ms: Union[float, Mapping[str, float]],
    queue: int,
    dropped: int,
    ts: Optional[float] = None,
    **extra: Any,
) -> dict:
    """``R/stats``: periodic pipeline figures.

    The four figures of the contract (fps, latency, queue, dropped) are always present;
    anything else (per-camera figures, MQTT counters) goes in as extra keyword fields.
    """
    payload = {
        "device_id": device_id,
        "ts": _now_s(ts),
        "fps": float(fps),
        "latency_ms": dict(latency_ms) if isinstance(latency_ms, Mapping) else float(latency_ms),
        "queue": int(queue),
        "dropped": int(dropped),
    }
    payload.update(extra)
    return payload


def _masked_recording(camera) -> dict:
    """A privacy-masked camera's re-encode in its ``R/stats`` entry; nothing for a stream copy."""
    recording = camera.recording
    if recording is None or recording.masked_encoder is None:
        return {}
    return {"recording_encoder": recording.masked_encoder,
            "recording_masked_packets_dropped": recording.masked_packets_dropped}


def stats_payload_for(status: StatusReport, ts: Optional[float] = None) -> dict:
    """``R/stats`` built from the same report as ``GET /api/v1/status``."""
    latency = status.pipeline.latency_ms
    model_of = {camera: model.name for model in status.models for camera in model.cameras}
    return stats_payload(
        status.device_id,
        fps=status.pipeline.fps,
        latency_ms={"p50": latency.p50, "p99": latency.p99},
        queue=status.mqtt.queued,
        dropped=status.frames_dropped,
        ts=ts,
        cameras={c.id: {"fps": c.fps, "state": c.state, "frames_dropped": c.frames_dropped,
                        **({"model": model_of[c.id]} if c.id in model_of else {}), **_masked_recording(c)}
                 for c in status.cameras},
        # the active profile's name (null: none); R/profile holds why and the next boundary
        **({"profile": status.profile.active} if status.profile is not None else {}),
    )


CONFIG_STATUSES = ("applied", "rejected")


def config_desired_payload(version: int, patch: Mapping[str, Any]) -> dict:
    """``R/config/desired``: ``{"version": N, "patch": {<RFC 7396 merge patch>}}`` (the fleet's side)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"a desired configuration version is an integer >= 1, got {version!r}")
    return {"version": version, "patch": dict(patch)}


def config_reported_payload(version: Optional[int], status: str, errors: Iterable[Mapping[str, str]] = (),
                            ts: Optional[float] = None) -> dict:
    """``R/config/reported``: ``{"version", "status": "applied"|"rejected", "errors": [{"loc", "msg"}], "ts"}``.

    ``version`` is null only for a message so malformed that it names no version. Error texts
    are masked: they leave the process.
    """
    if status not in CONFIG_STATUSES:
        raise ValueError(f"config status must be one of {CONFIG_STATUSES}, got {status!r}")
    return {"version": version, "status": status,
            "errors": [{"loc": str(e["loc"]), "msg": mask_secrets(str(e["msg"]))} for e in errors], "ts": _now_s(ts)}


def _jsonable(value: Any) -> Any:
    # JSON has no NaN/Infinity: a strict subscriber (JavaScript's JSON.parse) rejects the whole
    # message, so a non-finite figure becomes null instead.
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays, without importing numpy
        return _jsonable(value.tolist())
    return value


def encode(payload: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON, the wire form of every payload.

    Payloads of plain finite numbers, strings, lists and dicts with string keys (every frame's
    detections) are dumped as they are; anything else (NaN, numpy values, other keys) is
    converted by ``_jsonable`` first. Walking each frame's payload in Python cost more CPU than
    the rest of publishing it.
    """
    if isinstance(payload, dict) and all(type(key) is str for key in payload):
        try:
            return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):  # a value JSON cannot take as it is: converted below
            pass
    return json.dumps(_jsonable(payload), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
