"""How frames pass from a capture thread to the consumer, and how files are paced.

Two named policies:

* ``DROP_OLDEST`` (live streams, and files played in real time): a one-frame slot that always
  holds the newest frame. A camera does not wait for a slow detector; the frame it replaces
  unconsumed is counted as dropped, so latency stays one frame and the drop count tells the truth.
* ``WAIT`` (files with ``realtime: false``): a queue of up to ``WAIT_READ_AHEAD`` frames, taken
  oldest first; the producer waits while it is full, so no frame of a file is lost. The wait
  ends early when the slot is closed (the camera is stopping). Reading ahead keeps a camera's
  next frames ready while the pipeline works, so a batch need not wait for each camera's
  thread to read its next frame.
"""
from __future__ import annotations

import collections
import enum
import threading
from typing import Callable, Deque, Optional

from edge_app.capture.frame import Frame

DEFAULT_FILE_FPS = 25.0
#: frames of a file decoded ahead of the pipeline (each holds its picture: a few MB)
WAIT_READ_AHEAD = 4


class BufferPolicy(str, enum.Enum):
    DROP_OLDEST = "drop_oldest"
    WAIT = "wait"


def policy_for(live: bool, realtime: bool) -> BufferPolicy:
    """Live sources and real-time files drop the oldest frame; other files never lose one."""
    return BufferPolicy.DROP_OLDEST if live or realtime else BufferPolicy.WAIT


class FrameSlot:
    """The hand-over point between one producer thread and any number of consumers."""

    def __init__(self, policy: BufferPolicy, read_ahead: int = WAIT_READ_AHEAD) -> None:
        if read_ahead < 1:
            raise ValueError("read_ahead must be at least 1")
        self.policy = policy
        self._capacity = read_ahead if policy is BufferPolicy.WAIT else 1
        self._cond = threading.Condition()
        self._pending: Deque[Frame] = collections.deque()  # put but not taken yet, oldest first
        self._latest: Optional[Frame] = None  # newest ever put, consumed or not (snapshots)
        self._dropped = 0
        self._closed = False

    @property
    def dropped(self) -> int:
        return self._dropped

    def put(self, frame: Frame) -> bool:
        """Offer a frame. Returns False (frame not stored) only when the slot was closed."""
        with self._cond:
            if self.policy is BufferPolicy.WAIT:
                while len(self._pending) >= self._capacity and not self._closed:
                    self._cond.wait()
            if self._closed:
                return False
            if len(self._pending) >= self._capacity:
                self._pending.popleft()
                self._dropped += 1
            self._pending.append(frame)
            self._latest = frame
            self._cond.notify_all()
            return True

    def show(self, frame: Frame) -> None:
        """Keep ``frame`` as the newest (snapshots, live view) without offering it to the consumer:
        a frame the motion gate held back."""
        with self._cond:
            if self._closed:
                return
            self._latest = frame
            self._cond.notify_all()

    def take(self) -> Optional[Frame]:
        """The oldest unconsumed frame, or None; never blocks. Makes room for a waiting producer."""
        with self._cond:
            if not self._pending:
                return None
            frame = self._pending.popleft()
            self._cond.notify_all()
            return frame

    def peek(self) -> Optional[Frame]:
        """The newest frame put so far, consumed or not, without consuming it."""
        return self._latest

    def wait_newer(self, after_frame_id: int, timeout_s: float) -> Optional[Frame]:
        """The newest frame once it is not ``after_frame_id`` (live view without analysis); None on timeout."""
        with self._cond:
            self._cond.wait_for(lambda: (self._latest is not None and self._latest.frame_id != after_frame_id)
                                or self._closed, timeout_s)
            latest = self._latest
            return latest if latest is not None and latest.frame_id != after_frame_id else None

    def wait_drained(self, timeout_s: Optional[float] = None) -> bool:
        """Wait until every pending frame was taken (or the slot closed); True when drained."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending or self._closed, timeout_s) and not self._pending

    def close(self) -> None:
        """Refuse further frames and wake a waiting producer; frames already in stay takeable."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Pacer:
    """Releases frames at a fixed rate on the monotonic clock (files played in real time).

    The schedule is anchored at the first frame; when the producer falls more than one frame
    behind (slow decoding, a paused process) the anchor moves instead of bursting to catch up.
    """

    def __init__(self, fps: float, monotonic: Callable[[], float], sleep: Callable[[float], bool]) -> None:
        """``sleep(seconds)`` must return True when interrupted (the camera is stopping)."""
        self.period_s = 1.0 / fps if fps > 0 else 1.0 / DEFAULT_FILE_FPS
        self._monotonic = monotonic
        self._sleep = sleep
        self._next_mono_s: Optional[float] = None

    def wait_turn(self) -> bool:
        """Sleep until the next frame is due; False when the sleep was interrupted."""
        now_s = self._monotonic()
        if self._next_mono_s is None or now_s - self._next_mono_s > self.period_s:
            self._next_mono_s = now_s
        delay_s = self._next_mono_s - now_s
        if delay_s > 0 and self._sleep(delay_s):
            return False
        self._next_mono_s += self.period_s
        return True

    def skip(self, frames: int) -> None:
        """``frames`` went by without a turn (a decoder process dropped them on its schedule): the
        next frame is due that much later, so the file still plays at its own rate."""
        if self._next_mono_s is not None and frames > 0:
            self._next_mono_s += frames * self.period_s

    def reset(self) -> None:
        self._next_mono_s = None


def file_fps(reported_fps: float) -> float:
    """The frame rate to pace a file at: what the container says when plausible, else 25."""
    if reported_fps != reported_fps or reported_fps <= 0 or reported_fps > 1000:  # NaN, 0, garbage
        return DEFAULT_FILE_FPS
    return float(reported_fps)
