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
#: rows of a covariance kept as blocks: each component's variance, its covariance with its rate, the rate's variance
POS, CROSS, RATE = 0, 1, 2
MIN_SIDE_PX = 1e-3


def xyxy_to_xyah(xyxy: np.ndarray) -> np.ndarray:
    """``(N, 4)`` corners to ``(N, 4)`` centre x, centre y, aspect w/h, height."""
    xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    # Columns written into one array: np.stack's overhead shows on every frame.
    out = np.empty_like(xyxy)
    w = np.maximum(xyxy[:, 2] - xyxy[:, 0], MIN_SIDE_PX)
    h = np.maximum(xyxy[:, 3] - xyxy[:, 1], MIN_SIDE_PX)
    out[:, 0] = xyxy[:, 0] + w / 2
    out[:, 1] = xyxy[:, 1] + h / 2
    out[:, 2] = w / h
    out[:, 3] = h
    return out


def xyah_to_xyxy(xyah: np.ndarray) -> np.ndarray:
    """The inverse of :func:`xyxy_to_xyah` on the first four columns of ``xyah``."""
    out = np.empty((xyah.shape[0], 4))
    h = np.maximum(xyah[:, 3], MIN_SIDE_PX)
    half_w = np.maximum(xyah[:, 2], MIN_SIDE_PX) * h / 2
    half_h = h / 2
    out[:, 0] = xyah[:, 0] - half_w
    out[:, 1] = xyah[:, 1] - half_h
    out[:, 2] = xyah[:, 0] + half_w
    out[:, 3] = xyah[:, 1] + half_h
    return out


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
    """Predict and correct many box states at once; the arrays live with the caller.

    Every matrix of this model pairs each measured component with its own rate and nothing else
    (the transition adds ``dt`` times the rate to its component; the noises are diagonal), so a
    covariance that starts diagonal stays made of four independent 2 x 2 blocks. It is kept as
    such, ``(N, 3, 4)``: the variance of each component (``cov[:, POS]``), its covariance with its
    rate (``cov[:, CROSS]``) and the rate's variance (``cov[:, RATE]``). The filter is then a few
    element-wise operations per frame instead of 8 x 8 products and a solve per track, with the
    same result (``tests/track/test_kalman.py`` checks it against the full matrices).
    """

    def __init__(self, noise: KalmanNoise = KalmanNoise()) -> None:
        self.noise = noise
        nz = noise
        # Each standard deviation is (relative * height + absolute); aspect terms are absolute.
        self._init_std = _coefficients(nz.init_pos, nz.init_aspect, nz.init_vel_per_s, nz.init_aspect_vel_per_s)
        self._process_std = _coefficients(nz.process_pos_per_s, nz.process_aspect_per_s, nz.process_vel_per_s, nz.process_aspect_vel_per_s)
        rel, absolute = _coefficients(nz.measure_pos, nz.measure_aspect, 0.0, 0.0)
        self._measure_std = (rel[:MEASURE_DIM], absolute[:MEASURE_DIM])

    def initiate(self, xyah: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """New states at rest for measurements ``(N, 4)``: means ``(N, 8)``, covariances ``(N, 3, 4)``."""
        n = xyah.shape[0]
        mean = np.zeros((n, STATE_DIM))
        mean[:, :MEASURE_DIM] = xyah
        variance = _std(self._init_std, xyah[:, 3]) ** 2
        cov = np.zeros((n, 3, MEASURE_DIM))
        cov[:, POS] = variance[:, :MEASURE_DIM]
        cov[:, RATE] = variance[:, MEASURE_DIM:]
        return mean, cov

    def predict(self, mean: np.ndarray, cov: np.ndarray, dt_s: float) -> Tuple[np.ndarray, np.ndarray]:
        """Advance every state by ``dt_s`` seconds of constant velocity."""
        if mean.shape[0] == 0 or dt_s <= 0:
            return mean, cov
        noise = _std(self._process_std, mean[:, 3]) ** 2 * dt_s
        moved = mean.copy()
        moved[:, :MEASURE_DIM] += dt_s * mean[:, MEASURE_DIM:]
        pos, cross, rate = cov[:, POS], cov[:, CROSS], cov[:, RATE]
        grown = np.empty_like(cov)
        grown[:, POS] = pos + dt_s * (2.0 * cross + dt_s * rate) + noise[:, :MEASURE_DIM]
        grown[:, CROSS] = cross + dt_s * rate
        grown[:, RATE] = rate + noise[:, MEASURE_DIM:]
        return moved, grown

    def update(self, mean: np.ndarray, cov: np.ndarray, xyah: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Correct states ``(K, 8)`` with their measurements ``(K, 4)``."""
        if mean.shape[0] == 0:
            return mean, cov
        pos, cross, rate = cov[:, POS], cov[:, CROSS], cov[:, RATE]
        innovation_var = pos + _std(self._measure_std, mean[:, 3]) ** 2
        gain_pos, gain_rate = pos / innovation_var, cross / innovation_var
        innovation = xyah - mean[:, :MEASURE_DIM]
        corrected = np.empty_like(mean)
        corrected[:, :MEASURE_DIM] = mean[:, :MEASURE_DIM] + gain_pos * innovation
        corrected[:, MEASURE_DIM:] = mean[:, MEASURE_DIM:] + gain_rate * innovation
        shrunk = np.empty_like(cov)
        shrunk[:, POS] = pos - gain_pos * pos
        shrunk[:, CROSS] = cross - gain_pos * cross
        shrunk[:, RATE] = rate - gain_rate * cross
        return corrected, shrunk


def _coefficients(pos: float, aspect: float, vel: float, aspect_vel: float) -> Tuple[np.ndarray, np.ndarray]:
    """(relative to height, absolute) standard deviations of the 8 state components."""
    relative = np.array([pos, pos, 0.0, pos, vel, vel, 0.0, vel])
    absolute = np.array([0.0, 0.0, aspect, 0.0, 0.0, 0.0, aspect_vel, 0.0])
    return relative, absolute


def _std(coefficients: Tuple[np.ndarray, np.ndarray], height: np.ndarray) -> np.ndarray:
    relative, absolute = coefficients
    return height[:, None] * relative + absolute
