"""What ``test://`` cameras may cost: they are drawn in Python at whatever size and rate they ask.

A source of 8192 x 8192 at 1000 fps is valid on its own, and 64 cameras are allowed; each held
about 760 MB (four frames of width x height x 3 bytes: the pattern, the frame in the buffer, the
detector's copy and the snapshot's). So the enabled synthetic cameras of a configuration share
one budget: their frames may hold at most a quarter of the device's memory, and together they
may draw at most ``MAX_PIXELS_PER_S``. The change path (``edge_app.config_change.checks``) refuses
a configuration over either, whoever sends it; the broker may not add synthetic sources at all
(``edge_app.config.remote_policy``).
"""
from __future__ import annotations

import os
from typing import List, Optional

from edge_app.config.file import Problem
from edge_app.config.schema import AppConfig
from edge_app.config.source_spec import SourceError, SourceKind, parse_source

#: frames a synthetic camera holds at once, measured: 8192 x 8192 cost ~760 MB of RSS (3.8 frames)
FRAMES_HELD = 4
#: the share of the device's memory that synthetic frames may hold together
MEMORY_SHARE = 0.25
#: pixels per second all synthetic cameras together may draw: about eight 1080p cameras at 30 fps
MAX_PIXELS_PER_S = 500_000_000


def physical_memory_bytes() -> Optional[int]:
    """The device's memory, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def synthetic_problems(config: AppConfig, memory_bytes: Optional[int]) -> List[Problem]:
    """The first enabled ``test://`` camera at which the synthetic budget runs out, as a problem."""
    memory_budget = MEMORY_SHARE * memory_bytes if memory_bytes else None
    held_bytes = 0
    pixels_per_s = 0.0
    cameras = 0
    for index, cam in enumerate(config.cameras):
        if not cam.enabled:
            continue
        try:
            spec = parse_source(cam.source)
        except SourceError:
            continue  # the schema has refused it already
        if spec.kind is not SourceKind.TEST:
            continue
        width, height, fps = int(spec.options["width"]), int(spec.options["height"]), float(spec.options["fps"])
        cameras += 1
        held_bytes += width * height * 3 * FRAMES_HELD
        pixels_per_s += width * height * fps
        loc = f"cameras.{index}.source"
        if memory_budget is not None and held_bytes > memory_budget:
            return [Problem(loc, f"{cameras} test:// cameras would hold {held_bytes / 1e6:.0f} MB of frames (width x "
                                 f"height x 3 bytes x {FRAMES_HELD} frames each), over a quarter of this device's "
                                 f"{memory_bytes / 1e9:.1f} GB; make them smaller or fewer")]
        if pixels_per_s > MAX_PIXELS_PER_S:
            return [Problem(loc, f"{cameras} test:// cameras would draw {pixels_per_s / 1e6:.0f} megapixels per second "
                                 f"(width x height x fps), over the {MAX_PIXELS_PER_S / 1e6:.0f} allowed for synthetic "
                                 f"sources; lower their size or fps")]
    return []


__all__ = ["FRAMES_HELD", "MAX_PIXELS_PER_S", "MEMORY_SHARE", "physical_memory_bytes", "synthetic_problems"]
