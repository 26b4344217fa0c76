"""A constant-velocity Kalman filter over boxes, batched over every track of a camera.

State per track: ``[cx, cy, a, h, vcx, vcy, va, vh]`` (centre, aspect ratio w/h, height and
their rates per second); the measurement is ``[cx, cy, a, h]``. Noise scales with the box
height, so a near object and a far one are equally sure of their position relative to their
size. Working on all tracks at once keeps a frame with 50 objects to a handful of numpy calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

STATE_DIM = 8
MEASURE_DIM = 4
MIN_SIDE_PX = 1e-3


def xyxy_to_xyah(xyxy: np.ndarray) -> np.ndarray:
    """``(N, 4)`` corners to ``(N, 4)`` centre x, centre y, aspect w/h, height."""
    xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    w = np.maximum(xyxy[:, 2] - xyxy[:, 0], MIN_SIDE_PX)
    h = np.maximum(xyxy[:, 3] - xyxy[:, 1], MIN_SIDE_PX)
    return np.stack([xyxy[:, 0] + w / 2, xyxy[:, 1] + h / 2, w / h, h], axis=1)


def xyah_to_xyxy(xyah: np.ndarray) -> np.ndarray:
    """The inverse of :func:`xyxy_to_xyah` on the first four columns of ``xyah``."""
    h = np.maximum(xyah[:, 3], MIN_SIDE_PX)
    w = np.maximum(xyah[:, 2], MIN_SIDE_PX) * h
    cx, cy = xyah[:, 0], xyah[:, 1]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)


@dataclass(frozen=True)
class KalmanNoise:
    """Standard deviations, relative to the box height unless named ``aspect``.

    Process noise is a random walk: its variance grows linearly with the time step, so the
    filter behaves the same at 5 and at 30 frames per second.
    """

    measure_pos: float = 0.05
    measure_aspect: float = 0.1
    process_pos_per_s: float = 0.27
    process_vel_per_s: float = 1.0
    process_aspect_per_s: float = 0.05
    process_aspect_vel_per_s: float = 0.002
    init_pos: float = 0.1
    init_vel_per_s: float = 1.9
    init_aspect: float = 0.01
    init_aspect_vel_per_s: float = 0.0003


class BoxKalman:
    """Predict and correct many box states at once; the arrays live with the caller."""

    def __init__(self, noise: KalmanNoise = KalmanNoise()) -> None:
        self.noise = noise
        nz = noise
        # Each standard deviation is (relative * height + absolute); aspect terms are absolute.
        self._init_std = _coefficients(nz.init_pos, nz.init_aspect, nz.init_vel_per_s, nz.init_aspect_vel_per_s)
        self._process_std = _coefficients(nz.process_pos_per_s, nz.process_aspect_per_s, nz.process_vel_per_s, nz.process_aspect_vel_per_s)
        rel, absolute = _coefficients(nz.measure_pos, nz.measure_aspect, 0.0, 0.0)
        self._measure_std = (rel[:MEASURE_DIM], absolute[:MEASURE_DIM])

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


def _coefficients(pos: float, aspect: float, vel: float, aspect_vel: float) -> Tuple[np.ndarray, np.ndarray]:
    """(relative to height, absolute) standard deviations of the 8 state components."""
    relative = np.array([pos, pos, 0.0, pos, vel, vel, 0.0, vel])
    absolute = np.array([0.0, 0.0, aspect, 0.0, 0.0, 0.0, aspect_vel, 0.0])
    return relative, absolute


def _std(coefficients: Tuple[np.ndarray, np.ndarray], height: np.ndarray) -> np.ndarray:
    relative, absolute = coefficients
    return height[:, None] * relative + absolute


def _diag(values: np.ndarray) -> np.ndarray:
    """``(N, D)`` diagonals to ``(N, D, D)`` matrices."""
    n, d = values.shape
    out = np.zeros((n, d, d))
    out[:, np.arange(d), np.arange(d)] = values
    return out
