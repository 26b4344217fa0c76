"""Random hostile input to the artifact routes over real HTTP: never a 500, nothing written outside the store."""
from __future__ import annotations

import json
import random

import requests

from tests.fleet.artifact_helpers import ADMIN, TOKENS, artifact_fleet, engine_key, model_bytes, sha, upload

PIECES = ["..", "/", "%2e", "%2f", "%00", "\\", "~", "*", "gate", "1", "a" * 70, "é", "%", "?", "#", ";", " ",
          "0" * 64, "A" * 64, "-", ".", "_", "\u202e", "{}", "null"]
RANGES = ["bytes=0-", "bytes=-1", "bytes=5-2", "bytes=0-0,2-3", "bytes=abc", "bytes=99999999999999999999-",
          "items=0-1", "bytes=", "bytes=-0", "bytes=10-", "bytes=0-99999999"]


def _junk(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))


def _header(text: str) -> str:
    """Junk a client can send as a header value (no leading or trailing space)."""
    return text.encode("utf-8").decode("latin-1").strip() or "x"


def test_random_hostile_requests_never_fail_inside_or_escape_the_store(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(3000, seed=1)
    upload(fleet, "gate", "1", onnx)
    rng = random.Random(27)
    device = {"Authorization": f"Bearer {TOKENS['edge-a']}", "X-Edge-Device": "edge-a"}
    outside_before = sorted(p.name for p in tmp_path.iterdir())
    with requests.Session() as http:
        for _ in range(150):
            choice = rng.randrange(5)
            if choice == 0:
                answer = http.put(f"{fleet.url}/api/v1/models/{_junk(rng)}/{_junk(rng)}", data=b"x", headers=ADMIN,
                                  timeout=10)
            elif choice == 1:
                answer = http.get(f"{fleet.url}/api/v1/blobs/{rng.choice([sha(onnx), _junk(rng)])}", timeout=10,
                                  headers={**device, "Range": rng.choice(RANGES), "If-Range": _header(_junk(rng)[:40])})
            elif choice == 2:
                answer = http.get(f"{fleet.url}/api/v1/devices/{_junk(rng)}/models/{_junk(rng)}/{_junk(rng)}/manifest",
                                  headers={**device, "X-Edge-Device": rng.choice(["edge-a", _header(_junk(rng)[:80])])},
                                  timeout=10)
            elif choice == 3:
                key = engine_key(sha(onnx), **{rng.choice(["gpu_name", "max_batch", "input_size", "x" * 40]):
                                               rng.choice([_junk(rng), -1, 2 ** 40, [1], None, True, 1.5])})
                text = json.dumps(key) if rng.random() < 0.8 else _header(_junk(rng))
                answer = http.put(f"{fleet.url}/api/v1/engines", data=_junk(rng).encode(), timeout=10,
                                  headers={**device, "X-Engine-Key": text.encode("utf-8").decode("latin-1"),
                                           "X-Content-SHA256": rng.choice([_header(_junk(rng)), sha(b"x")])})
            else:
                answer = http.post(f"{fleet.url}/api/v1/models/gate/{_junk(rng)}/rollout", headers=ADMIN, timeout=10,
                                   json=rng.choice([{"devices": _junk(rng)}, {"devices": [_junk(rng)]}, [], {"x": 1}]))
            assert answer.status_code < 500, (choice, answer.status_code, answer.text[:200])
    assert sorted(p.name for p in tmp_path.iterdir()) == outside_before
    stored = [p for p in (tmp_path / "artifacts").rglob("*") if p.is_file()]
    assert all(len(p.name) == 64 and p.parent.name == p.name[:2] for p in stored)
