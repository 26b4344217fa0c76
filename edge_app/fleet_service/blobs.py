"""Content-addressed files of the fleet: every model file and engine is stored under its SHA-256.

The only name that ever reaches the filesystem is a checked 64-digit lowercase hex digest
(:func:`blob_path`); nothing a client sends is used as a path. A file is written to a temporary
name in the same directory while its digest is computed, checked, flushed and only then renamed
into place, so a crash or a refused upload never leaves a partial file under a digest's name.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional

logger = logging.getLogger(__name__)

SHA256_HEX = re.compile(r"[0-9a-f]{64}")
CHUNK_BYTES = 1 << 20
_TEMP_DIR = "incoming"


class BlobError(Exception):
    """Why a file was not stored; ``status`` is the HTTP answer that says so."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class StoredBlob:
    sha256: str
    bytes: int


def is_sha256(value: object) -> bool:
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


class BlobStore:
    """Files under ``root/<2 digits>/<digest>``; ``max_total_bytes`` bounds them all together."""

    def __init__(self, root: Path, max_total_bytes: int):
        # Absolute from the start: a relative artifacts.dir means the working directory at start,
        # never the directory a web framework would resolve it against.
        self.root = Path(root).absolute()
        self._max_total_bytes = max_total_bytes
        self._lock = threading.Lock()
        # Created at the first upload: a fleet that never stores a model leaves no directory behind.
        if (self.root / _TEMP_DIR).is_dir():
            for stale in (self.root / _TEMP_DIR).iterdir():  # uploads cut off by a stop: never complete
                stale.unlink(missing_ok=True)
        self._used_bytes = sum(p.stat().st_size for p in self.root.glob("??/*") if is_sha256(p.name))

    def blob_path(self, sha256: str) -> Path:
        if not is_sha256(sha256):
            raise ValueError("a blob is named by 64 lowercase hexadecimal digits")
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return is_sha256(sha256) and self.blob_path(sha256).is_file()

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used_bytes

    def write(self, stream: BinaryIO, max_bytes: int, expected_sha256: Optional[str] = None) -> StoredBlob:
        """Store what ``stream`` holds; BlobError 413 above ``max_bytes``, 507 when the store is full,
        400 when ``expected_sha256`` is given and the bytes do not have it."""
        (self.root / _TEMP_DIR).mkdir(parents=True, exist_ok=True)
        temp = self.root / _TEMP_DIR / f"{uuid.uuid4().hex}.part"
        digest = hashlib.sha256()
        size = 0
        reserved = 0
        try:
            with open(temp, "xb") as out:
                while True:
                    chunk = stream.read(CHUNK_BYTES)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > max_bytes:
                        raise BlobError(413, f"the file is larger than the limit of {max_bytes} bytes "
                                             "(artifacts.max_upload_mb)")
                    # Space is reserved while the bytes arrive, so two uploads cannot both fill the last gap.
                    self._reserve(len(chunk))
                    reserved += len(chunk)
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            sha256 = digest.hexdigest()
            if expected_sha256 is not None and sha256 != expected_sha256:
                raise BlobError(400, f"the body's SHA-256 is {sha256}, not {expected_sha256} as declared; "
                                     "nothing was stored")
            final = self.blob_path(sha256)
            final.parent.mkdir(exist_ok=True)
            with self._lock:
                if final.is_file():  # the same content again: one copy is enough
                    self._used_bytes -= reserved
                else:
                    os.replace(temp, final)
                reserved = 0
            return StoredBlob(sha256, size)
        finally:
            if reserved:
                with self._lock:
                    self._used_bytes -= reserved
            temp.unlink(missing_ok=True)

    def remove(self, sha256: str) -> None:
        path = self.blob_path(sha256)
        with self._lock:
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                return
            self._used_bytes -= size

    def _reserve(self, size: int) -> None:
        with self._lock:
            if self._used_bytes + size > self._max_total_bytes:
                raise BlobError(507, f"the artifact store is full ({self._max_total_bytes} bytes, artifacts.max_mb)")
            self._used_bytes += size
