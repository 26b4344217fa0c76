"""Small numeric helpers shared by the sections."""
from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np


def percentiles_ms(values_ms: Sequence[float]) -> Dict[str, Optional[float]]:
    if len(values_ms) == 0:
        return {"p50": None, "p99": None, "count": 0}
    p50, p99 = np.percentile(np.asarray(values_ms, dtype=np.float64), [50, 99])
    return {"p50": round(float(p50), 1), "p99": round(float(p99), 1), "count": len(values_ms)}


def ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, 3)
