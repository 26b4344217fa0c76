"""A datagram socket like systemd's $NOTIFY_SOCKET, for testing what edge-app tells systemd."""
from __future__ import annotations

import socket
import threading
import time
from typing import List, Tuple


class NotifySocket:
    """A datagram socket like systemd's; keeps every message with the time it arrived."""

    def __init__(self, address: str):
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(0.2)
        self.messages: List[Tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            self.messages.append((time.monotonic(), data.decode()))

    def lines(self, key: str) -> List[Tuple[float, str]]:
        return [(t, line) for t, message in list(self.messages) for line in message.split("\n") if line.startswith(key + "=")]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
