"""The stand-in's "engine" file: magic, JSON header, ONNX bytes. Not TensorRT's plan format."""
from __future__ import annotations

import json
import struct
from typing import Any, Dict, Optional, Tuple

MAGIC = b"EDGEAPP-TRT-STANDIN-ENGINE\x00"


def pack(header: Dict[str, Any], onnx_bytes: bytes) -> bytes:
    header = dict(header, onnx_bytes=len(onnx_bytes))
    text = json.dumps(header, sort_keys=True).encode()
    return MAGIC + struct.pack("<I", len(text)) + text + onnx_bytes


def unpack(data: bytes) -> Tuple[Optional[Dict[str, Any]], bytes, str]:
    """(header, onnx bytes, problem); header is None when the data is not a whole stand-in engine."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        return None, b"", "magic tag not found (not a serialized engine)"
    offset = len(MAGIC)
    if len(data) < offset + 4:
        return None, b"", "engine is truncated"
    (length,) = struct.unpack("<I", data[offset:offset + 4])
    offset += 4
    try:
        header = json.loads(data[offset:offset + length].decode())
    except (UnicodeDecodeError, ValueError):
        return None, b"", "engine header is corrupt"
    onnx_bytes = data[offset + length:]
    if len(onnx_bytes) != header.get("onnx_bytes"):
        return None, b"", f"engine is truncated ({len(onnx_bytes)} of {header.get('onnx_bytes')} weight bytes)"
    return header, onnx_bytes, ""
