"""Limits on answers that are held open while a client reads them (exports, clips by signed URL).

A limit that covered only the work before the first byte would let slow readers pile up answers
without bound: each place taken here is given back when the server closes the answer (the last
byte sent, the client gone, or the server stopping), never before.
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, Hashable

from flask import Response
from werkzeug.wsgi import ClosingIterator


class HeldLimit:
    """At most ``limit`` answers at once for each key (one key for a limit over all of them)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._held: Dict[Hashable, int] = {}

    def take(self, key: Hashable = None) -> bool:
        """A place for ``key``; False when ``limit`` answers of it are open."""
        with self._lock:
            held = self._held.get(key, 0)
            if held >= self.limit:
                return False
            self._held[key] = held + 1
            return True

    def give(self, key: Hashable = None) -> None:
        with self._lock:
            left = self._held.get(key, 0) - 1
            if left > 0:
                self._held[key] = left
            else:
                self._held.pop(key, None)  # a key no answer holds is forgotten: the map stays small

    def held(self, key: Hashable = None) -> int:
        with self._lock:
            return self._held.get(key, 0)


def once(action: Callable[[], None]) -> Callable[[], None]:
    """``action``, run on the first call only (a place is given back once, whoever closes first)."""
    done = threading.Lock()

    def run() -> None:
        if done.acquire(blocking=False):
            action()
    return run


def release_when_closed(response: Response, release: Callable[[], None]) -> Response:
    """Run ``release`` once the server has closed ``response``'s body (sent, abandoned or a HEAD).

    Werkzeug closes the body it was given when the server closes what the app returned, whether
    it passes the body on as it is (a file) or encodes it (a generator), and for HEAD too.
    """
    response.response = ClosingIterator(response.response, release)
    return response
