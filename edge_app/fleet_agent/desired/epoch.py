"""Which fleet epochs and issue times an appliance accepts desired configurations from.

Every desired message the fleet sends carries the fleet's epoch for the device (chosen anew when
the fleet's database starts over or an operator resets the device's version there) and the time
it was issued, both under the signature (``edge_app.fleet_protocol.desired_signature``). Versions
order the messages of one epoch; across epochs the issue time does, so that a captured message
can never be replayed to roll a configuration back:

* a message of the epoch followed now is judged by its version alone (as before epochs);
* a message of another epoch is acted on only when it was issued after the last message acted
  on: a new fleet's first message starts its epoch, whatever its version; a replay of an older
  epoch's message is older than what was acted on since, and is refused;
* ``edge-app fleet-reset`` retires the epoch followed and remembers when it ran: nothing of a
  retired epoch and nothing issued before the reset is acted on again;
* a message issued more than a day ahead of the appliance's clock is refused: it would make
  every real message after it look older.

Messages without an epoch (a hand-published one, on a broker that requires a login, without
``fleet.desired_key``) are judged by their version alone, as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional, Tuple

from edge_app.config.file import Problem
from edge_app.fleet_agent.desired.config import DesiredConfig
from edge_app.fleet_protocol.desired_signature import valid_epoch, valid_issued_ms

#: How far ahead of this appliance's clock an issue time may be.
MAX_AHEAD_MS = 86_400_000
#: Epochs retired by fleet-reset that are remembered (the newest).
MAX_RETIRED = 16
_RESET_HINT = "after the fleet started over, run edge-app fleet-reset on this appliance"


@dataclass(frozen=True)
class EpochState:
    """What the appliance remembers of epochs (saved with the version, ``desired.versions``)."""

    epoch: Optional[str] = None  # the epoch of the last message acted on
    issued_ms: Optional[int] = None  # that message's issue time
    reset_at_ms: Optional[int] = None  # when edge-app fleet-reset last ran
    retired: Tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch, "issued_at_ms": self.issued_ms, "reset_at_ms": self.reset_at_ms,
                "retired_epochs": list(self.retired)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EpochState":
        """The state in a saved file; ValueError for one that is not of this form."""
        epoch, issued, reset_at = data.get("epoch"), data.get("issued_at_ms"), data.get("reset_at_ms")
        retired = data.get("retired_epochs") or []
        if (epoch is not None and not valid_epoch(epoch)) or (issued is not None and not valid_issued_ms(issued)) \
                or (reset_at is not None and not valid_issued_ms(reset_at)) or not isinstance(retired, list) \
                or not all(valid_epoch(e) for e in retired):
            raise ValueError("the saved epoch, issue time, reset time or retired epochs are not of their form")
        return cls(epoch, issued, reset_at, tuple(retired[-MAX_RETIRED:]))


def refusal(state: EpochState, desired: DesiredConfig, now_ms: int) -> Optional[Problem]:
    """Why ``desired`` must not be acted on for its epoch or issue time, or None."""
    epoch, issued = desired.epoch, desired.issued_ms
    if epoch is None or issued is None:
        return None
    if issued > now_ms + MAX_AHEAD_MS:
        return Problem("issued_at_ms", "issued more than a day ahead of this appliance's clock")
    if epoch in state.retired:
        return Problem("epoch", f"from a fleet epoch retired by edge-app fleet-reset ({epoch[:8]})")
    if state.reset_at_ms is not None and issued < state.reset_at_ms:
        return Problem("issued_at_ms", "issued before edge-app fleet-reset last ran on this appliance")
    if state.epoch is not None and epoch != state.epoch and (state.issued_ms is None or issued <= state.issued_ms):
        return Problem("epoch", f"from another fleet epoch ({epoch[:8]}, not {state.epoch[:8]}) and issued before "
                                f"the last configuration acted on: a replay, or {_RESET_HINT}")
    return None


def starts_epoch(state: EpochState, desired: DesiredConfig) -> bool:
    """Whether ``desired`` (not refused) begins an epoch: its version is then not compared with the last one."""
    return desired.epoch is not None and desired.epoch != state.epoch


def acted_on(state: EpochState, desired: DesiredConfig) -> EpochState:
    """The state once ``desired`` is acted on."""
    if desired.epoch is None or desired.issued_ms is None:
        return state
    return replace(state, epoch=desired.epoch, issued_ms=max(desired.issued_ms, state.issued_ms or 0)
                   if desired.epoch == state.epoch else desired.issued_ms)


def reset(state: EpochState, now_ms: int) -> EpochState:
    """``edge-app fleet-reset``: the epoch followed is retired, and nothing issued before now is acted on."""
    retired = state.retired + ((state.epoch,) if state.epoch and state.epoch not in state.retired else ())
    return EpochState(None, None, now_ms, retired[-MAX_RETIRED:])


__all__ = ["EpochState", "MAX_AHEAD_MS", "acted_on", "refusal", "reset", "starts_epoch"]
