"""The reference for ``edge_app.track.kalman.BoxKalman``: the same model written with full 8 x 8
matrices, a matrix product per prediction and a solve per correction, as the tracker ran it before
its covariances were kept as 2 x 2 blocks. Test code only."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from edge_app.track.kalman import CROSS, MEASURE_DIM, POS, RATE, STATE_DIM, BoxKalman, _std


def full_covariance(cov: np.ndarray) -> np.ndarray:
    """The ``(N, 8, 8)`` matrices of covariances kept as blocks ``(N, 3, 4)``."""
    n = cov.shape[0]
    full = np.zeros((n, STATE_DIM, STATE_DIM))
    component = np.arange(MEASURE_DIM)
    full[:, component, component] = cov[:, POS]
    full[:, component, component + MEASURE_DIM] = cov[:, CROSS]
    full[:, component + MEASURE_DIM, component] = cov[:, CROSS]
    full[:, component + MEASURE_DIM, component + MEASURE_DIM] = cov[:, RATE]
    return full


class FullKalman(BoxKalman):
    """The textbook filter over full 8 x 8 covariances ``(N, 8, 8)``, with BoxKalman's noise."""

    def initiate(self, xyah: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """New states at rest for measurements ``(N, 4)``: means ``(N, 8)``, covariances ``(N, 8, 8)``."""
        n = xyah.shape[0]
        mean = np.zeros((n, STATE_DIM))
        mean[:, :MEASURE_DIM] = xyah
        return mean, _diag(_std(self._init_std, xyah[:, 3]) ** 2)

    def predict(self, mean: np.ndarray, cov: np.ndarray, dt_s: float) -> Tuple[np.ndarray, np.ndarray]:
        """Advance every state by ``dt_s`` seconds of constant velocity."""
        if mean.shape[0] == 0 or dt_s <= 0:
            return mean, cov
        transition = np.eye(STATE_DIM)
        transition[np.arange(MEASURE_DIM), np.arange(MEASURE_DIM) + MEASURE_DIM] = dt_s
        std = _std(self._process_std, mean[:, 3])
        mean = mean @ transition.T
        cov = transition @ cov @ transition.T + _diag(std ** 2 * dt_s)
        return mean, cov

    def update(self, mean: np.ndarray, cov: np.ndarray, xyah: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Correct states ``(K, 8)`` with their measurements ``(K, 4)``."""
        if mean.shape[0] == 0:
            return mean, cov
        std = _std(self._measure_std, mean[:, 3])
        innovation_cov = cov[:, :MEASURE_DIM, :MEASURE_DIM] + _diag(std ** 2)
        cross = cov[:, :, :MEASURE_DIM]
        # K = P H^T S^-1, solved rather than inverted; S is symmetric so solve(S, (P H^T)^T)^T.
        gain = np.linalg.solve(innovation_cov, np.transpose(cross, (0, 2, 1))).transpose(0, 2, 1)
        innovation = xyah - mean[:, :MEASURE_DIM]
        mean = mean + np.einsum("kij,kj->ki", gain, innovation)
        cov = cov - gain @ cov[:, :MEASURE_DIM, :]
        return mean, cov


def _diag(values: np.ndarray) -> np.ndarray:
    """``(N, D)`` diagonals to ``(N, D, D)`` matrices."""
    n, d = values.shape
    out = np.zeros((n, d, d))
    out[:, np.arange(d), np.arange(d)] = values
    return out
