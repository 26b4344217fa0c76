"""The states of a camera stream (docs/mqtt.md) and the transitions between them.

The transition table is explicit so that a wrong move (``stopped -> streaming``, say) is a loud
bug instead of a confusing state on a dashboard.

    stopped ──start──> connecting ──first frame──> streaming
                           │                          │ read failure / stall
                           └──open failure──> reconnecting <┘
                                                 │  (retries with backoff, stays here)
                                                 └──frame──> streaming
    any running state ──stop / end of file──> stopped
    any running state ──source that can never work──> error
"""
from __future__ import annotations

import enum
import threading
from types import MappingProxyType
from typing import FrozenSet, Mapping, Optional, Tuple


class StreamState(str, enum.Enum):
    """Camera states; the value is what MQTT and the API publish."""

    CONNECTING = "connecting"
    STREAMING = "streaming"
    RECONNECTING = "reconnecting"
    STOPPED = "stopped"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


_S = StreamState

ALLOWED_TRANSITIONS: Mapping[StreamState, FrozenSet[StreamState]] = MappingProxyType({
    _S.STOPPED: frozenset({_S.CONNECTING}),
    _S.CONNECTING: frozenset({_S.STREAMING, _S.RECONNECTING, _S.STOPPED, _S.ERROR}),
    _S.STREAMING: frozenset({_S.RECONNECTING, _S.STOPPED, _S.ERROR}),
    # Retries stay in "reconnecting" (no flapping through "connecting" on every attempt),
    # so a retained MQTT state changes only when something really changed.
    _S.RECONNECTING: frozenset({_S.STREAMING, _S.STOPPED, _S.ERROR}),
    # A camera in error may be started again once its configuration was fixed.
    _S.ERROR: frozenset({_S.CONNECTING, _S.STOPPED}),
})


class IllegalTransition(RuntimeError):
    """A state change the table does not allow: always a bug in the caller."""


def check_transition(old: StreamState, new: StreamState) -> None:
    """Raise IllegalTransition unless ``old -> new`` is in ALLOWED_TRANSITIONS."""
    if new not in ALLOWED_TRANSITIONS[old]:
        raise IllegalTransition(f"camera state cannot go from {old.value} to {new.value}")


class StateMachine:
    """The current state of one camera plus the error text that goes with it; thread-safe.

    ``transition`` returns whether anything changed: moving to the state one is already in is
    not an error (two failure paths may race to "reconnecting"), it only refreshes the error.
    """

    def __init__(self, initial: StreamState = StreamState.STOPPED) -> None:
        self._lock = threading.Lock()
        self._state = initial
        self._error: Optional[str] = None

    @property
    def state(self) -> StreamState:
        return self._state

    @property
    def error(self) -> Optional[str]:
        return self._error

    def snapshot(self) -> Tuple[StreamState, Optional[str]]:
        with self._lock:
            return self._state, self._error

    def transition(self, new: StreamState, error: Optional[str] = None) -> bool:
        with self._lock:
            if new is self._state:
                self._error = error
                return False
            check_transition(self._state, new)
            self._state = new
            self._error = error
            return True
