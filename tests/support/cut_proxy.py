"""A TCP proxy that can make a service go away in the middle of an answer, and come back later.

``cut_after(n)``: once ``n`` bytes of one connection's answers have gone through, that
connection is closed on both sides and the proxy stops listening (clients get "connection
refused", as from a service that is down); ``restore()`` listens again on the same port.
"""
from __future__ import annotations

import socket
import threading
from typing import List, Optional, Tuple


class CutProxy:
    def __init__(self, target: Tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: Optional[socket.socket] = None
        self._lock = threading.Lock()
        self._cut_after: Optional[int] = None
        self._sockets: List[socket.socket] = []
        self.cuts = 0
        self.connections = 0
        self._listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="test:proxy", daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        sent = 0
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if answers:
                    with self._lock:
                        limit = self._cut_after
                    if limit is not None and sent + len(data) >= limit:
                        sink.sendall(data[:max(0, limit - sent)])
                        self._go_away()
                        return
                sink.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _go_away(self) -> None:
        with self._lock:
            self._cut_after = None
            self.cuts += 1
            sockets, self._sockets = self._sockets, []
            listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept(); close alone does not
            except OSError:
                pass
            listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def cut_after(self, answer_bytes: int) -> None:
        with self._lock:
            self._cut_after = answer_bytes

    @property
    def down(self) -> bool:
        return self._listener is None

    def restore(self) -> None:
        if self._listener is None:
            self._listen()

    def close(self) -> None:
        self._go_away()
