"""Where an object stands, in the normalised coordinates zones and lines are drawn in."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

Point = Tuple[float, float]

# Boxes are clipped to the frame, so an object at the picture's edge has its reference point
# exactly on the border, where the even-odd test of a zone drawn to that border says "outside".
# Keeping points a hair inside the frame makes zones drawn to the edge hold them.
_EDGE_INSET = 1e-9


def reference_points(xyxy: np.ndarray, frame_width: int, frame_height: int) -> np.ndarray:
    """``(N, 2)`` bottom centres of the boxes, as fractions of the frame (x right, y down).

    The bottom centre is where an object touches the ground, so a zone drawn on the floor
    holds the people standing on it whatever their height.
    """
    if frame_width <= 0 or frame_height <= 0:
        raise ValueError(f"frame size must be positive, got {frame_width}x{frame_height}")
    xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    points = np.stack([(xyxy[:, 0] + xyxy[:, 2]) / 2 / frame_width, xyxy[:, 3] / frame_height], axis=1)
    return np.clip(points, _EDGE_INSET, 1.0 - _EDGE_INSET)


def polygon_edges(polygon: Sequence[Point]) -> np.ndarray:
    """``(4, E)``: x1, y1, x2, y2 of each edge of ``polygon``, the last point joined to the first."""
    poly = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    x1, y1 = poly[:, 0], poly[:, 1]
    return np.stack([x1, y1, np.roll(x1, -1), np.roll(y1, -1)])


def points_in_polygon(points: np.ndarray, polygon: Sequence[Point], edges: Optional[np.ndarray] = None) -> np.ndarray:
    """``(N,)`` bool: which points lie inside ``polygon`` (even-odd rule, any simple or not).
    ``edges``: ``polygon_edges(polygon)``, made once by a caller that tests every frame."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    x1, y1, x2, y2 = polygon_edges(polygon) if edges is None else edges
    x, y = points[:, 0:1], points[:, 1:2]
    spans = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        x_cross = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
    crossings = spans & (x < x_cross)
    return (crossings.sum(axis=1) % 2) == 1


def polygons_edges(polygons: Sequence[Sequence[Point]]) -> Tuple[np.ndarray, np.ndarray]:
    """Every polygon's edges side by side, for ``points_in_polygons``: ``(4, E)`` rows x1, y1, the
    edge's dx/dy (0 for a level edge, which no horizontal ray crosses) and y2; and where each
    polygon's edges start ``(P,)``."""
    if not polygons:
        return np.zeros((4, 0)), np.zeros(0, np.intp)
    each = [polygon_edges(polygon) for polygon in polygons]
    starts = np.cumsum([0] + [edges.shape[1] for edges in each[:-1]]).astype(np.intp)
    x1, y1, x2, y2 = np.concatenate(each, axis=1)
    dy = y2 - y1
    slope = np.divide(x2 - x1, dy, out=np.zeros_like(dy), where=dy != 0)
    return np.stack([x1, y1, slope, y2]), starts


def points_in_polygons(points: np.ndarray, edges: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``(N, P)`` bool: which points lie inside which polygon (``polygons_edges``), the even-odd
    rule of ``points_in_polygon`` for every polygon at once: one pass over all their edges, then
    the parity of each polygon's crossings, so the cost of a frame hardly grows with the zones."""
    x, y = points[:, 0:1], points[:, 1:2]
    x1, y1, slope, y2 = edges
    crossings = ((y1 > y) != (y2 > y)) & (x < x1 + (y - y1) * slope)
    return np.logical_xor.reduceat(crossings, starts, axis=1)
