"""An H.264 Annex B byte stream cut into access units (one picture each).

The hardware encoders hand back bytes, not packets: NVENC a picture per call but sometimes two at
the end, GStreamer a pipe of bytes. The recorder wants one packet per picture, its keyframes
marked, so the stream is cut where a new access unit starts (H.264 7.4.1.2.3): at an access unit
delimiter, SPS, PPS or SEI after a picture's slices, or at a slice whose first macroblock is 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

NAL_SLICE = 1
NAL_IDR = 5
#: NAL types that open a new access unit when they follow a picture's slices
_STARTERS = frozenset({6, 7, 8, 9})


@dataclass(frozen=True)
class AccessUnit:
    data: bytes  # Annex B, start codes included
    keyframe: bool  # holds an IDR slice


def _nal_starts(data: bytes) -> List[Tuple[int, int]]:
    """(start code offset, payload offset) of every NAL unit."""
    out: List[Tuple[int, int]] = []
    index = data.find(b"\x00\x00\x01")
    while index >= 0:
        begin = index - 1 if index > 0 and data[index - 1] == 0 else index
        out.append((begin, index + 3))
        index = data.find(b"\x00\x00\x01", index + 3)
    return out


def split_access_units(data: bytes) -> List[AccessUnit]:
    """``data`` (whole access units, Annex B) as one ``AccessUnit`` per picture."""
    units: List[AccessUnit] = []
    start, in_picture, keyframe = None, False, False
    for begin, payload in _nal_starts(data):
        if payload >= len(data):
            break
        nal_type = data[payload] & 0x1F
        is_slice = nal_type in (NAL_SLICE, NAL_IDR)
        # first_mb_in_slice is the first ue(v) after the one-byte header: 0 is coded as a single 1 bit
        first_slice = is_slice and payload + 1 < len(data) and bool(data[payload + 1] & 0x80)
        if start is not None and in_picture and (nal_type in _STARTERS or first_slice):
            units.append(AccessUnit(data[start:begin], keyframe))
            start, in_picture, keyframe = None, False, False
        if start is None:
            start = begin
        if is_slice:
            in_picture = True
            keyframe = keyframe or nal_type == NAL_IDR
    if start is not None and in_picture:
        units.append(AccessUnit(data[start:], keyframe))
    return units


__all__ = ["AccessUnit", "split_access_units"]
