"""Where the labels of boxes go so that none hides another (the dashboard's EdgeLogic.placeLabels
places the labels it draws by the same rule).

Each label is tried above its box, inside its top (no room above), under its box, then further
under (or above) it in steps of its own height; the first place that overlaps no label placed before wins.
Labels are placed in the order given: a caller passes the best-scored boxes first, so theirs
keep the places next to their boxes. A label stays inside the picture.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence


@dataclass(frozen=True)
class LabelRect:
    """A label's rectangle in pixels: its top-left corner and its size."""

    x: int
    y: int
    w: int
    h: int

    def overlaps(self, other: "LabelRect") -> bool:
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)


@dataclass(frozen=True)
class LabelToPlace:
    """The box a label belongs to (x1, y1, x2, y2 in pixels) and the label's size."""

    x1: int
    y1: int
    x2: int
    y2: int
    w: int
    h: int


def place_labels(labels: Sequence[LabelToPlace], width_px: int, height_px: int) -> List[LabelRect]:
    """One rectangle per label, in the order given, none overlapping another where there is room."""
    placed: List[LabelRect] = []
    for label in labels:
        x = max(0, min(label.x1, width_px - label.w))
        tops = [label.y1 - label.h, label.y1, label.y2] if label.y1 >= label.h else [label.y1, label.y2]
        for step in range(1, len(labels) + 1):  # further under its box, or above (at the bottom edge)
            tops += [label.y2 + step * label.h, label.y1 - (step + 1) * label.h]
        spots = [LabelRect(x, max(0, min(top, height_px - label.h)), label.w, label.h) for top in tops]
        spot = next((s for s in spots if not any(s.overlaps(other) for other in placed)), spots[0])
        placed.append(spot)
    return placed
