"""A TCP server that accepts and never answers: an RTSP camera whose open hangs in FFmpeg."""
from __future__ import annotations

import socket
import threading
from typing import List


class HungServer:
    """Accepts connections and holds them silently until ``release()`` closes them all."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._listener = socket.create_server((host, 0))
        self.host, self.port = self._listener.getsockname()[:2]
        self._held: List[socket.socket] = []
        self._lock = threading.Lock()
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept, name="hung-server", daemon=True)
        self._thread.start()

    def url(self, path: str = "stream") -> str:
        return f"rtsp://{self.host}:{self.port}/{path}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._held.append(conn)
                self.accepted += 1

    def release(self) -> None:
        """Close the held connections: every open hanging on them returns (with an error) now."""
        with self._lock:
            held, self._held = self._held, []
        for conn in held:
            conn.close()

    def close(self) -> None:
        self._listener.close()
        self.release()
