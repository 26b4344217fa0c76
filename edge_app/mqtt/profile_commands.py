"""The publisher's side of profiles (docs/profiles.md): the retained ``R/profile``, the
``R/profile/set`` subscription and the ``R/profile/error`` replies.

A part of :class:`edge_app.mqtt.publisher.MqttPublisher`, like ``fleet_publishing``. Anyone on
the broker may publish ``R/profile/set``, so a command counts only when it is not retained (a
retained one would switch again at every reconnect, over whatever the owner chose since) and its
payload is the name of a profile of this appliance, as plain UTF-8 text (what a Home Assistant
select sends). Anything else is refused with a reply on ``R/profile/error`` saying why, at most
one a second, and counted; the log says so at most once a minute, so a flood fills neither.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from edge_app.mqtt.outbox import Outbox

log = logging.getLogger(__name__)

#: ``handler(name)`` for a valid ``R/profile/set``; runs on paho's network thread
ProfileSetHandler = Callable[[str], None]
#: a profile name is an id (edge_app.config.schema_profiles): never longer than this
MAX_COMMAND_BYTES = 64
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: errors answered on R/profile/error at most this often
REPLY_EVERY_S = 1.0
LOG_EVERY_S = 60.0


def profile_error_payload(reason: str, ts: float) -> Dict[str, Any]:
    """``{"error", "ts"}``: why an ``R/profile/set`` command was refused."""
    return {"error": reason, "ts": round(ts, 3)}


class ProfilePublisher:
    """``publish_profile``, ``on_profile_set`` and the refusals of :class:`MqttPublisher`."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.topics = outbox.topics
        self._lock = threading.Lock()
        self._handler: Optional[ProfileSetHandler] = None
        self._known: Callable[[], List[str]] = list
        self._replied_mono_s: Optional[float] = None
        self._logged_mono_s: Optional[float] = None
        self.refused = 0

    def publish_profile(self, body: Dict[str, Any]) -> bool:
        """Retained ``R/profile`` (QoS 1); while offline only the latest is kept, then sent."""
        return self._outbox.enqueue_json(lambda: self.topics.profile, lambda: body, retain=True)

    def on_profile_set(self, handler: ProfileSetHandler, profiles: Callable[[], List[str]]) -> None:
        """Subscribe to ``R/profile/set``; ``handler(name)`` for each valid command (it must not block).

        ``profiles()`` gives the names a command may ask for (the configuration's, at that moment).
        """
        with self._lock:
            self._handler, self._known = handler, profiles
        self._outbox.subscribe([(self.topics.profile_set, 1)])

    def connect_subscriptions(self) -> List[Tuple[str, int]]:
        return [(self.topics.profile_set, 1)] if self._handler is not None else []

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        """True when the message was ``R/profile/set`` (acted on or refused here)."""
        handler = self._handler
        if handler is None or topic != self.topics.profile_set:
            return False
        name, why = self._parse(bytes(payload), retained)
        if name is None:
            self._refuse(why)
            return True
        try:
            handler(name)
        except Exception:  # a failing handler must not take paho's network thread down
            log.exception("handling %s failed", topic)
        return True

    def _parse(self, payload: bytes, retained: bool) -> Tuple[Optional[str], str]:
        if retained:
            return None, "a retained command is not acted on (publish commands without retain)"
        if len(payload) > MAX_COMMAND_BYTES:
            return None, f"the payload is {len(payload)} bytes; a profile name has at most {MAX_COMMAND_BYTES}"
        try:
            name = payload.decode("utf-8").strip()
        except UnicodeDecodeError:
            return None, "the payload is not UTF-8 text"
        if not _NAME.match(name):
            return None, "the payload is not a profile name (letters, digits, _ and -)"
        known = self._known()
        if name not in known:
            return None, f"there is no profile {name!r} (profiles: {', '.join(known) or 'none'})"
        return name, ""

    def _refuse(self, why: str) -> None:
        now_mono_s = time.monotonic()
        with self._lock:
            self.refused += 1
            reply = self._replied_mono_s is None or now_mono_s - self._replied_mono_s >= REPLY_EVERY_S
            if reply:
                self._replied_mono_s = now_mono_s
            write_log = self._logged_mono_s is None or now_mono_s - self._logged_mono_s >= LOG_EVERY_S
            if write_log:
                self._logged_mono_s = now_mono_s
            refused = self.refused
        if reply:
            self._outbox.enqueue_json(lambda: self.topics.profile_error,
                                      lambda: profile_error_payload(why, time.time()), retain=False)
        if write_log:
            log.warning("refused MQTT command on %s: %s (%d refused so far)", self.topics.profile_set, why, refused)


__all__ = ["ProfilePublisher", "ProfileSetHandler", "profile_error_payload"]
