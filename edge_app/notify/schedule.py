"""When a target may be told: its quiet hours (local time) and its cooldown per camera. Pure."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from edge_app.config.schema_notify import QuietHoursConfig, minute_of_day


def in_quiet_hours(quiet: Optional[QuietHoursConfig], minute: int) -> bool:
    """Whether ``minute`` (of the local day, 0 to 1439) is inside ``quiet``: start included, end not.

    A period whose end is before its start spans midnight (22:00 to 07:00).
    """
    if quiet is None:
        return False
    start, end = minute_of_day(quiet.start), minute_of_day(quiet.end)
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


class Cooldown:
    """Per (target, camera): a notification sent at ``t`` holds back the next until ``t + cooldown_s``."""

    def __init__(self) -> None:
        self._sent_at: Dict[Tuple[str, str], float] = {}

    def allows(self, target: str, camera_id: str, cooldown_s: float, now_s: float) -> bool:
        last = self._sent_at.get((target, camera_id))
        return last is None or now_s - last >= cooldown_s

    def sent(self, target: str, camera_id: str, now_s: float) -> None:
        self._sent_at[(target, camera_id)] = now_s
