"""Switching profiles (docs/profiles.md): by hand (REST, MQTT, the fleet) and by the weekly schedule.

Every switch is a configuration change (``profiles.active``, ``profiles.hold_until``, saved to the
file) through the one change path, so the file, the API and the running appliance never disagree
and a restart keeps the profile in force.

A manual switch holds until the next scheduled boundary: it writes ``hold_until``, and the
schedule's thread (``profiles:schedule``) leaves the profile alone until then, so the two never
fight. Any change of ``profiles.active`` the schedule did not make (a ``PATCH``, the fleet's
``R/config/desired``) counts as a manual switch and gets its hold the same way.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Tuple

from edge_app.config.file import Problem, redacted_dict
from edge_app.config.profile_schedule import (ProfileReport, iso_in_zone, next_boundary, profile_state, report_of,
                                              schedule_zone)
from edge_app.config.schema import AppConfig
from edge_app.config_change.changes import ConfigChanges, ConfigRefused, Origin
from edge_app.process.worker import WorkerThread

log = logging.getLogger(__name__)

#: the schedule is looked at this often at most apart (and at each boundary, and after each change)
TICK_S = 30.0
#: switches asked for over MQTT change the configuration (and write the file) at most this often
MIN_REQUEST_INTERVAL_S = 1.0

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Unchanged(Exception):
    """The profile in force is already the one wished."""


def _hold(config: AppConfig, now: datetime) -> Optional[str]:
    """When a manual switch made at ``now`` ends: the next scheduled boundary (None: never)."""
    zone = schedule_zone(config.profiles)
    boundary = next_boundary(config.profiles, now, zone)
    return iso_in_zone(boundary[0], zone) if boundary is not None else None


def _with_profile(current: AppConfig, name: Optional[str], hold_until: Optional[str]) -> Any:
    if (current.profiles.active, current.profiles.hold_until) == (name, hold_until):
        raise _Unchanged()
    data = redacted_dict(current)  # as the detect switch: masked secrets are restored by the change path
    data["profiles"]["active"], data["profiles"]["hold_until"] = name, hold_until
    return data


def switch_profile(changes: ConfigChanges, name: str, origin: Origin, now: datetime) -> ProfileReport:
    """A manual switch: ``name`` active until the next scheduled boundary; ConfigRefused for an unknown name."""
    def build(current: AppConfig) -> Any:
        names = current.profiles.names()
        if name not in names:
            raise ConfigRefused("no such profile", [Problem("profile", f"there is no profile {name[:64]!r} "
                                                                       f"(profiles: {', '.join(names) or 'none'})")])
        return _with_profile(current, name, _hold(current, now))

    try:
        changes.write(build, origin)
    except _Unchanged:
        pass
    log.info("profile %s switched on (%s)", name, origin.value)
    return report_of(changes.current().profiles, now)


class ProfileSwitch:
    """``switch(name)`` by hand; a thread follows the schedule; ``on_applied`` after every change."""

    def __init__(self, changes: ConfigChanges, publish: Callable[[ProfileReport], Any],
                 *, clock: Clock = _utc_now, tick_s: float = TICK_S) -> None:
        self._changes = changes
        self._publish = publish
        self._clock = clock
        self._tick_s = tick_s
        self._cond = threading.Condition()
        self._woken = False
        self._wanted: Optional[str] = None  # the latest profile asked for over MQTT, applied by the thread
        self._next_request_mono_s = 0.0
        # (active, hold_until) as this switch last saw or wrote them: a different active is someone else's switch.
        self._seen: Optional[Tuple[Optional[str], Optional[str]]] = None
        self._worker = WorkerThread(self._run, "profiles:schedule", wake=self.wake)

    def start(self) -> "ProfileSwitch":
        self._worker.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._worker.stop(timeout_s)

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def request(self, name: str) -> None:
        """Note a switch asked for over MQTT (on paho's network thread, which must not wait for a change).

        Only the latest is kept, and one is applied at most every MIN_REQUEST_INTERVAL_S: a flood
        costs one thread and about one file write a second, and the last one sent holds.
        """
        with self._cond:
            pending, self._wanted = self._wanted is not None, name
            if not pending:  # the thread already knows when it may apply the pending one: a flood wakes it once
                self._woken = True
                self._cond.notify_all()

    def report(self) -> ProfileReport:
        return report_of(self._changes.current().profiles, self._clock())

    def on_applied(self, config: AppConfig) -> None:
        """Told after every applied change (under the change lock: only note and publish)."""
        self._publish(report_of(config.profiles, self._clock()))
        self.wake()

    def switch(self, name: str, origin: Origin = Origin.API) -> ProfileReport:
        """Make ``name`` active until the next scheduled boundary; ConfigRefused for an unknown name."""
        try:
            return switch_profile(self._changes, name, origin, self._clock())
        finally:
            self._note_seen()

    def follow_schedule(self) -> None:
        """Write what the schedule (or a hold that ended) says, and give a foreign switch its hold."""
        now = self._clock()

        def build(current: AppConfig) -> Any:
            profiles = current.profiles
            if self._seen is not None and profiles.active != self._seen[0] and profiles.hold_until == self._seen[1]:
                # switched by a PATCH or the fleet: a manual switch, held like one
                return _with_profile(current, profiles.active, _hold(current, now))
            state = profile_state(profiles, now, schedule_zone(profiles))
            if state.source == "manual" or (state.active == profiles.active and profiles.hold_until is None):
                raise _Unchanged()
            log.info("profile %s switched on by the schedule", state.active or "(none)")
            return _with_profile(current, state.active, None)

        try:
            self._changes.write(build, Origin.SCHEDULE)
        except _Unchanged:
            pass
        except ConfigRefused as err:
            log.warning("switching profiles by the schedule refused: %s", err.summary())
        finally:
            self._note_seen()

    def _note_seen(self) -> None:
        profiles = self._changes.current().profiles
        self._seen = (profiles.active, profiles.hold_until)

    def _seconds_to_wait(self) -> float:
        config = self._changes.current()
        zone = schedule_zone(config.profiles)
        now = self._clock()
        boundary = next_boundary(config.profiles, now, zone)
        hold = profile_state(config.profiles, now, zone).hold_until
        due = [moment for moment in (boundary[0] if boundary else None, hold) if moment is not None]
        until = min(((moment - now).total_seconds() for moment in due), default=self._tick_s)
        return max(0.05, min(self._tick_s, until))

    def _take_request(self) -> Optional[str]:
        with self._cond:
            if self._wanted is None or time.monotonic() < self._next_request_mono_s:
                return None
            wanted, self._wanted = self._wanted, None
            self._next_request_mono_s = time.monotonic() + MIN_REQUEST_INTERVAL_S
            return wanted

    def _run(self) -> None:
        self._publish(self.report())  # retained R/profile from the start, whatever the schedule does
        while not self._worker.stopping.is_set():
            try:
                wanted = self._take_request()
                if wanted is not None:
                    self.switch(wanted, Origin.PROFILE_SWITCH)
            except ConfigRefused as err:
                log.warning("switching profiles over MQTT refused: %s", err.summary())
            except Exception:
                log.exception("switching profiles over MQTT failed")
            try:
                self.follow_schedule()
                wait_s = self._seconds_to_wait()
                if self._wanted is not None:
                    wait_s = min(wait_s, max(0.05, self._next_request_mono_s - time.monotonic()))
            except Exception:  # the schedule must outlive any one change
                log.exception("following the profile schedule failed")
                wait_s = self._tick_s
            with self._cond:
                if not self._woken:
                    self._cond.wait(wait_s)
                self._woken = False
        self._wanted: Optional[str] = None  # the latest profile asked for over MQTT, applied by the thread
        self._next_request_mono_s = 0.0


__all__ = ["ProfileReport", "ProfileSwitch", "switch_profile"]
