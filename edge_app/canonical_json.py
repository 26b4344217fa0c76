"""The one canonical JSON text of a value, for what is compared or signed byte for byte: the
desired-configuration signature, the artifact manifest's digest, and the engine key the fleet
service stores engines under (written by the appliance, looked up by the service)."""
from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Keys sorted, no spaces, ASCII only; ValueError for NaN or infinity (JSON has neither)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
