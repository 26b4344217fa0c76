"""The fleet's side of ``R/health``: a hostile payload checked and reduced to the row the fleet keeps.

Anyone on the broker can publish on an appliance's topic, so a health message passes the same
size limit (FLEET.yaml ``ingest.message_bytes``, ``health``) and field checks
(:func:`edge_app.fleet_service.messages.decode`) as every other kind, only problem kinds the appliance
knows are kept for filtering, and what is stored is re-encoded from the parsed value.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from edge_app.finite_json import dumps_finite
from edge_app.health.problems import PROBLEM_KINDS

MAX_PROBLEMS = 64
#: what the fleet filters by besides the problem kinds
OFFLINE, ANY = "offline", "any"
PROBLEM_FILTERS = PROBLEM_KINDS + (OFFLINE, ANY)


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def problem_kinds(body: Dict[str, Any]) -> List[str]:
    """The known kinds of the report's problems, each once, in the appliance's order."""
    problems = body.get("problems")
    if not isinstance(problems, list):
        raise ValueError("a health report needs a 'problems' list")
    kinds = [p.get("kind") for p in problems[:MAX_PROBLEMS] if isinstance(p, dict)]
    return [kind for kind in PROBLEM_KINDS if kind in kinds]


def health_row(device_id: str, body: Dict[str, Any], received_s: float) -> Tuple:
    """``(device_id, body, problems, problem_count, temperature_c, ts, received_at)`` for the health table."""
    kinds = problem_kinds(body)
    summary = body.get("summary") if isinstance(body.get("summary"), dict) else {}
    # Stored space-delimited so a LIKE '% hot %' finds a kind the same way in SQLite and PostgreSQL.
    return (device_id, dumps_finite(body), f" {' '.join(kinds)} " if kinds else "", len(kinds),
            _finite(summary.get("temperature_c")), _finite(body.get("ts")), received_s)
