"""Shared pieces of the artifact tests: a fleet with device tokens and keys, requests as a device or an admin,
and model versions of the real ONNX."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

import requests

ADMIN_TOKEN = "fleet-admin-token-0123456789abcdef"
TOKENS = {"edge-a": "token-of-edge-a-0123456789", "edge-b": "token-of-edge-b-0123456789",
          "edge-nokey": "token-of-edge-nokey-01234"}
KEYS = {"edge-a": "desired-key-of-edge-a-0123456789abcdef", "edge-b": "desired-key-of-edge-b-0123456789abcdef"}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PLATFORM = "driver 580.65"


def artifact_fleet(fleet_factory, tmp_path: Path, max_upload_mb: int = 4, **overrides: Any):
    # These fleets take engines from any of their devices; the product's default takes none
    # (test_artifacts.py has a test of that).
    artifacts = {"dir": str(tmp_path / "artifacts"), "max_mb": 64, "max_upload_mb": max_upload_mb,
                 "engines_from": ["*"], **overrides.pop("artifacts", {})}
    return fleet_factory(api={"token": ADMIN_TOKEN}, device_tokens=TOKENS, desired_keys=KEYS, artifacts=artifacts,
                         **overrides)


def as_device(device_id: str, token: Optional[str] = None, **extra: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token or TOKENS[device_id]}", "X-Edge-Device": device_id, **extra}


def model_bytes(size: int, seed: int = 0) -> bytes:
    """Stand-in ONNX bytes: the fleet stores and hashes model files, it never parses them."""
    block = hashlib.sha256(f"model-{seed}".encode()).digest()
    return (block * (size // len(block) + 1))[:size] if seed else os.urandom(size)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def upload(fleet, name: str, version: str, onnx: bytes, labels: Optional[bytes] = None) -> requests.Response:
    if labels is None:
        return requests.put(f"{fleet.url}/api/v1/models/{name}/{version}", data=onnx, headers=ADMIN, timeout=30)
    files = {"onnx": ("model.onnx", onnx), "labels": ("labels.txt", labels)}
    return requests.put(f"{fleet.url}/api/v1/models/{name}/{version}", files=files, headers=ADMIN, timeout=30)


def engine_key(onnx_sha: str, **changes: Any) -> Dict[str, Any]:
    key = {"onnx_sha256": onnx_sha, "tensorrt_version": "10.3.0", "gpu_name": "NVIDIA H200",
           "compute_capability": "9.0", "precision": "fp16", "max_batch": 4, "input_size": [640, 640],
           "dla_core": None, "platform": PLATFORM}
    key.update(changes)
    return key


def offer(fleet, device_id: str, key: Dict[str, Any], body: bytes, declared: Optional[str] = None) -> requests.Response:
    headers = as_device(device_id, **{"X-Engine-Key": json.dumps(key, sort_keys=True, separators=(",", ":")),
                                      "X-Content-SHA256": declared or sha(body)})
    return requests.put(f"{fleet.url}/api/v1/engines", data=body, headers=headers, timeout=30)


def stamped_versions(model_path: Path, folder: Path, versions: Iterable[str]) -> Dict[str, bytes]:
    """The ONNX at ``model_path`` once per version: the same network, told apart by a metadata entry
    (so each version has a SHA-256 of its own)."""
    import onnx

    found = {}
    for version in versions:
        model = onnx.load(str(model_path))
        entry = model.metadata_props.add()
        entry.key, entry.value = "fleet_version", version
        path = folder / f"gate-{version}.onnx"
        onnx.save(model, str(path))
        found[version] = path.read_bytes()
    return found


def model_state(fleet, device_id: str, name: str = "gate") -> Dict[str, Any]:
    """What the fleet shows of ``device_id``'s ``models_state`` for the fleet model ``name`` ({} if nothing)."""
    return (fleet.get(f"/api/v1/devices/{device_id}", headers=ADMIN).json().get("models_state") or {}).get(name) or {}


def roll_out(fleet, version: str, device_id: str, name: str = "gate") -> None:
    response = requests.post(f"{fleet.url}/api/v1/models/{name}/{version}/rollout", json={"devices": [device_id]},
                             headers=ADMIN, timeout=10)
    assert response.status_code == 202, response.text
