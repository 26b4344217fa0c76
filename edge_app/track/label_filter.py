"""Which of a camera's zones or lines count an object, by its label, for a whole frame at once."""
from __future__ import annotations

from typing import FrozenSet, Sequence

import numpy as np


class LabelFilter:
    """The label filters of a camera's zones (or lines), in their order; an empty filter counts
    every label. :meth:`counted` compares the frame's labels with each label a filter names
    (a handful), not each object with each filter."""

    def __init__(self, filters: Sequence[FrozenSet[str]]) -> None:
        filters = [frozenset(f) for f in filters]
        self._areas = len(filters)
        self._names = sorted(set().union(*filters)) if filters else []
        # (F, A): filter label f lets area a count it; areas without a filter count every label
        self._allows = np.array([[name in f for f in filters] for name in self._names], bool).reshape(
            len(self._names), self._areas)
        self._open = np.array([not f for f in filters], bool)
        self.filtered = bool(self._names)  # some area counts only some labels

    def counted(self, labels: np.ndarray, tracked: np.ndarray) -> np.ndarray:
        """``(N, A)`` bool: object ``n`` (a tracked one, with label ``labels[n]``) counts for area ``a``;
        ``(N, 1)``, to broadcast, when no area has a filter."""
        if not self._names:
            return tracked[:, None]
        named = np.stack([labels == name for name in self._names], axis=1)  # (N, F)
        return ((named @ self._allows) | self._open) & tracked[:, None]
