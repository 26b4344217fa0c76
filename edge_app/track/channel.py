"""The appliance's end of a tracker child's pipe: a request sent and its answer read in as few
system calls as there can be.

Each blocking call lets go of the interpreter lock and must take it back when it returns, and
with busy threads around (the result lanes, capture, MQTT) each return can wait a thread-switch
interval for it. ``multiprocessing``'s ``Connection`` reads an answer in three such calls (poll
for the timeout, the length, the body); with three busy threads beside it a round trip of a
quarter of a millisecond took ten times as long. Here the socket of the same duplex ``Pipe`` (a
Unix socket pair) gets its receive timeout from the kernel (``SO_RCVTIMEO``), so one blocking
``recv`` waits and reads at once, and a request goes out in one ``send``. The framing is
``Connection``'s (a 4-byte big-endian length, then the pickle), so the child keeps its
``Connection``.
"""
from __future__ import annotations

import os
import pickle
import socket
import struct
import time
from typing import Any, Optional

_LENGTH = struct.Struct("!i")
_CHUNK_BYTES = 1 << 16  # an answer is a few hundred bytes; longer ones come in several reads


class ChannelTimeout(TimeoutError):
    """No whole answer came within the time given."""


class ChildChannel:
    """Requests to one child and its answers, one at a time, over the parent's end of a duplex Pipe."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn  # owns the descriptor; closed with the channel
        self._sock = socket.socket(fileno=os.dup(conn.fileno()))
        self._timeout_s: Optional[float] = None
        self._pending = bytearray()

    def send(self, message: Any) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self._sock.sendall(_LENGTH.pack(len(payload)) + payload)

    def receive(self, timeout_s: float) -> Any:
        """The next answer; ``ChannelTimeout`` when none came in ``timeout_s``, ``EOFError`` when
        the child closed its end."""
        deadline_s = time.monotonic() + timeout_s
        wait_s = timeout_s  # the same for every request of a kind: the socket option is set once
        while True:
            answer = self._take_frame()
            if answer is not None:
                return pickle.loads(answer)
            if wait_s <= 0:
                raise ChannelTimeout(f"no answer in {timeout_s:.1f} s")
            self._wait_at_most(wait_s)
            try:
                chunk = self._sock.recv(_CHUNK_BYTES)
            except BlockingIOError as exc:  # SO_RCVTIMEO ran out
                raise ChannelTimeout(f"no answer in {timeout_s:.1f} s") from exc
            if not chunk:
                raise EOFError("the child closed its end")
            self._pending += chunk
            wait_s = deadline_s - time.monotonic()  # the rest of an answer that came in parts

    def close(self) -> None:
        self._sock.close()
        self._conn.close()

    def _take_frame(self) -> Optional[bytes]:
        if len(self._pending) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(self._pending)
        if length < 0:  # Connection's marker of a body over 2 GiB: never an answer of a tracker
            raise EOFError("the child sent a frame this channel does not read")
        end = _LENGTH.size + length
        if len(self._pending) < end:
            return None
        frame = bytes(self._pending[_LENGTH.size:end])
        del self._pending[:end]
        return frame

    def _wait_at_most(self, timeout_s: float) -> None:
        # Rounded up to whole milliseconds; set only when it changes (one system call each).
        rounded_s = max(0.001, round(timeout_s + 0.0005, 3))
        if rounded_s == self._timeout_s:
            return
        seconds = int(rounded_s)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                              struct.pack("ll", seconds, int(round((rounded_s - seconds) * 1e6))))
        self._timeout_s = rounded_s
