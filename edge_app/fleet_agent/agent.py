"""The appliance's side of the fleet (docs/fleet.md): ``R/config/desired`` in, ``R/config/reported`` out.

A desired configuration is applied exactly like ``PATCH /api/v1/config`` (through the one
``ConfigChanges``, origin ``BROKER``: all or nothing, secrets re-used only where they went before,
no unsafe sources even when the file allows them to API clients), then its outcome is published,
retained, on ``R/config/reported``. Secrets never leave: the report carries no configuration,
and error texts are masked, also of any secret value the patch itself carried.

Trust: nothing is acted on unless ``edge_app.fleet_agent.desired.gate`` lets the message through (remote
configuration on in the file, and a valid signature or a broker that requires a login). A
refused message is reported with ``"version": null`` and never moves the version, so an
anonymous client can neither pin the version nor settle the fleet's rollouts. What an
authenticated patch may change is ``edge_app.config.remote_policy``'s allow-list.

Cost: anyone may flood the topic. On paho's thread a message costs a length check and a token of
a bucket (``edge_app.fleet_agent.desired.intake``); on the agent's thread a message without a
signature is refused before it is parsed; refusals are reported at most once per interval, with
a count (``edge_app.fleet_agent.desired.refusal_reports``), so a flood in never becomes a flood out.

Versions: each version is acted on once, in order. A version not above the last one acted on
is ignored and the retained report stays as it was. A version more than ``MAX_VERSION_STEP``
above the last one acted on is refused without moving the version, so no single message can
pin it near 2**53; ``edge-app fleet-reset`` clears the saved version when a fleet starts over.
Versions count within one fleet epoch: a message of a new epoch (issued after the last one acted
on) starts counting anew, and one of a retired epoch or issued before a reset is refused like an
unauthenticated one (``edge_app.fleet_agent.desired.epoch``). The version and its report are saved
(``edge_app.fleet_agent.desired.versions``) after the change is applied, so a crash in between applies the same
merge patch again on restart (harmless) rather than losing it. An appliance that was away gets
the retained desired message when it subscribes again, and applies it if it is new.

Threads: paho's network thread only queues the payload (``on_desired``); the ``fleet:config``
thread applies, because applying may replace the MQTT client itself (an ``mqtt`` change).
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Set

from edge_app.config.file import Problem
from edge_app.config_change.changes import ConfigChanges, ConfigRefused, Origin
from edge_app.fleet_agent.artifacts.state import ModelsState
from edge_app.fleet_agent.desired.epoch import acted_on, refusal as epoch_refusal, starts_epoch
from edge_app.fleet_agent.desired.gate import DesiredGate
from edge_app.fleet_agent.link import ApplianceFleetLink
from edge_app.fleet_agent.desired.intake import DesiredIntake
from edge_app.fleet_agent.desired.refusal_reports import RefusalReports
from edge_app.fleet_agent.desired.versions import APPLIED, REJECTED, ConfigReport, DesiredVersionStore, state_path_for
from edge_app.fleet_agent.desired.config import DesiredConfig, DesiredConfigError, parse_desired
from edge_app.config.redact import MASK, mask_secrets
from edge_app.process.worker import WorkerThread

log = logging.getLogger(__name__)

#: Publishes one ``R/config/reported`` payload (retained, QoS 1).
ReportPublisher = Callable[[Dict[str, Any]], Any]
_SECRET_KEYS = ("password", "token", "secret", "key", "pass", "pwd")
#: How far above the last version acted on a desired version may be (the fleet counts up by one).
MAX_VERSION_STEP = 1_000_000


def _secret_values(patch: Any, in_secret: bool = False) -> Set[str]:
    """Strings a patch carries under secret-looking keys, and whole sources holding credentials."""
    found: Set[str] = set()
    if isinstance(patch, dict):
        for key, value in patch.items():
            secret_key = isinstance(key, str) and any(word in key.lower() for word in _SECRET_KEYS)
            found |= _secret_values(value, in_secret or secret_key)
    elif isinstance(patch, list):
        for value in patch:
            found |= _secret_values(value, in_secret)
    elif isinstance(patch, str) and patch and patch != MASK and (in_secret or mask_secrets(patch) != patch):
        found.add(patch)
    return found


def scrub(problems: Iterable[Problem], patch: Any) -> List[Problem]:
    """Problems fit to publish: credentials masked, and no secret value of the patch in any text."""
    secrets = sorted(_secret_values(patch), key=len, reverse=True)
    scrubbed = []
    for problem in problems:
        msg = problem.msg
        for secret in secrets:
            msg = msg.replace(secret, mask_secrets(secret) if mask_secrets(secret) != secret else MASK)
        scrubbed.append(Problem(problem.loc, mask_secrets(msg)))
    return scrubbed


class FleetAgent:
    def __init__(self, changes: ConfigChanges, store: DesiredVersionStore, publish_reported: ReportPublisher,
                 *, gate: Optional[DesiredGate] = None, max_pending: int = 64, clock: Callable[[], float] = time.time,
                 models_state: Optional[Callable[[], Dict[str, Any]]] = None,
                 intake: Optional[DesiredIntake] = None, refusals: Optional[RefusalReports] = None,
                 refetch: Optional[Callable[[], None]] = None, link_up: Callable[[], bool] = lambda: True) -> None:
        self._changes = changes
        # Refusal reports wait for the MQTT link: one queued offline would be replaced by the next
        # retained R/config/reported, and the refusals it stood for lost from the reported sum.
        self._link_up = link_up
        # models_state (edge_app.fleet_agent.artifacts.state) rides along in every report
        self._models_state = models_state
        self._publish_lock = threading.Lock()
        self.gate = gate if gate is not None else DesiredGate(changes.current)
        self._intake = intake if intake is not None else DesiredIntake()
        self._refusals = refusals if refusals is not None else RefusalReports()
        self._refetch = refetch  # subscribes to R/config/desired again: the broker re-sends the retained message
        self._store = store
        self._publish_reported = publish_reported
        self._max_pending = max(1, max_pending)
        self._clock = clock
        self._version, self._last_report, self._epochs = store.load()
        self._cond = threading.Condition()
        self._pending: Deque[bytes] = collections.deque()
        self._busy = False
        self._worker = WorkerThread(self._run, "fleet:config", wake=self._notify)

    @property
    def version(self) -> int:
        """The last desired version acted on (0: none yet)."""
        return self._version

    def start(self) -> "FleetAgent":
        # The retained report on the broker may be older than the saved one (a crash before its
        # PUBACK); publishing it again costs one message and makes both agree.
        if self._last_report is not None:
            self._publish(self._last_report.to_payload())
        self._worker.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._worker.stop(timeout_s)

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def on_desired(self, payload: bytes) -> None:
        """Queue one ``R/config/desired`` payload (called on paho's network thread)."""
        if not payload:
            return  # an empty retained message clears the topic on the broker; it asks for nothing
        dropped = self._intake.refusal(payload)
        if dropped is not None:
            if self._note_refusal(dropped):
                with self._cond:
                    self._cond.notify_all()  # the agent's thread now has a report to wait for
            return
        with self._cond:
            if len(self._pending) >= self._max_pending:
                self._pending.popleft()
                log.warning("more than %d desired configurations waiting; dropping the oldest", self._max_pending)
            self._pending.append(bytes(payload))
            self._cond.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once nothing is queued or being applied (for tests and orderly stops)."""
        with self._cond:
            return self._cond.wait_for(lambda: not (self._pending or self._busy), timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._pending and not self._worker.stopping.is_set() and not self._refusals_due():
                    self._cond.wait(self._wake_after_s())  # a timeout only leads to the checks below
                if self._worker.stopping.is_set():
                    return
                payload = self._pending.popleft() if self._pending else None
                self._busy = True
            try:
                if payload is not None:
                    self.handle(payload)
                self._publish_refusals()
                if self._refetch is not None and self._intake.refetch_due():
                    log.info("desired messages were dropped for their rate; asking the broker for the retained one again")
                    self._refetch()
            except Exception:  # the agent must outlive any one message
                log.exception("acting on a desired configuration failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _refusals_due(self) -> bool:
        return self._refusals.seconds_until_due() == 0.0 and self._link_up()

    def _wake_after_s(self) -> Optional[float]:
        """How long the agent's thread may sleep: until a refusal report or a refetch is due; while a
        report waits for the link, at least a second (it looks at the link again then, never spins)."""
        due_s = self._refusals.seconds_until_due()
        if due_s is not None and not self._link_up():
            due_s = max(due_s, 1.0)
        if self._refetch is not None:
            due_s = 1.0 if due_s is None else min(due_s, 1.0)  # the bucket refills by the second
        return due_s

    def handle(self, payload: bytes) -> Optional[ConfigReport]:
        """Act on one desired message; the report published, or None when it was ignored."""
        refusal = self.gate.refusal_before_parsing(payload)  # no parsing for an unsigned flood
        if refusal is not None:
            return self._refuse_unauthenticated(refusal)
        try:
            desired = parse_desired(payload)
        except DesiredConfigError as err:
            refusal = self.gate.refusal(None)
            if refusal is not None:
                return self._refuse_unauthenticated(refusal)
            if err.version is not None and err.version <= self._version:
                return self._ignore(err.version)
            report = ConfigReport(err.version, REJECTED, tuple(scrub(err.problems, None)), self._clock())
            log.warning("desired configuration %s rejected: %s", err.version if err.version is not None else "(no version)", err)
            return self._conclude(report)
        refusal = self.gate.refusal(desired)  # before anything looks at the patch
        if refusal is None:  # authentic, but perhaps of a retired epoch or issued before a reset: a replay
            refusal = epoch_refusal(self._epochs, desired, int(self._clock() * 1000))
        if refusal is not None:
            return self._refuse_unauthenticated(refusal)
        # A new epoch (a fleet that started over) counts its versions anew.
        new_epoch = starts_epoch(self._epochs, desired)
        if not new_epoch and desired.version <= self._version:
            return self._ignore(desired.version)
        if not new_epoch and desired.version - self._version > MAX_VERSION_STEP:
            problem = Problem("version", f"more than {MAX_VERSION_STEP} above version {self._version}, the last one "
                                         "acted on; after the fleet started over, run edge-app fleet-reset on this appliance")
            log.warning("desired configuration %d rejected: %s", desired.version, problem.msg)
            report = ConfigReport(desired.version, REJECTED, (problem,), self._clock())
            self._publish(report.to_payload())  # the version does not move
            return report
        try:
            result = self._changes.patch(desired.patch, Origin.BROKER)
        except ConfigRefused as err:
            problems = scrub(err.problems, desired.patch)
            log.warning("desired configuration %d rejected: %s", desired.version, ConfigRefused(err.what, problems).summary())
            return self._conclude(ConfigReport(desired.version, REJECTED, tuple(problems), self._clock()), desired)
        except Exception as err:  # saving the file failed, say: report it, keep the version order
            problems = scrub([Problem("", f"applying failed: {type(err).__name__}: {err}")], desired.patch)
            log.error("desired configuration %d could not be applied: %s", desired.version, problems[0].msg)
            return self._conclude(ConfigReport(desired.version, REJECTED, tuple(problems), self._clock()), desired)
        if result.restart_required:
            log.info("desired configuration %d applied; after a restart: %s", desired.version, ", ".join(result.restart_required))
        else:
            log.info("desired configuration %d applied", desired.version)
        return self._conclude(ConfigReport(desired.version, APPLIED, (), self._clock()), desired)

    def _refuse_unauthenticated(self, problem: Problem) -> ConfigReport:
        """Refuse without a version: the message's claims, its version included, are not to be believed
        (not authenticated, or authentic but of a retired epoch: the fleet of today never sent it).

        The report is published now only when none was for a while (``desired.refusal_reports``).
        """
        self._note_refusal(problem)
        self._publish_refusals()
        return ConfigReport(None, REJECTED, (problem,), self._clock())

    def _note_refusal(self, problem: Problem) -> bool:
        """Count a refusal; True when it is the first one a report has yet to tell of."""
        self.gate.note_refusal(problem)
        return self._refusals.note(problem)

    def _publish_refusals(self) -> None:
        if not self._link_up():
            return
        due = self._refusals.take_due()
        if due is not None:
            report = ConfigReport(None, REJECTED, (due.problem,), self._clock())
            self._publish({**report.to_payload(), "refused": due.refused})

    def _ignore(self, version: int) -> None:
        log.info("desired configuration %d ignored: version %d was acted on already", version, self._version)
        return None

    def _conclude(self, report: ConfigReport, desired: Optional[DesiredConfig] = None) -> ConfigReport:
        if report.version is not None:
            if desired is not None:
                self._epochs = acted_on(self._epochs, desired)
            try:
                self._store.save(report.version, report, self._epochs)
            except OSError as err:
                # Applied and reported, but a restart may act on this version again (idempotent).
                log.error("could not save the desired configuration version to %s: %s", self._store.path, err)
            self._version, self._last_report = report.version, report
        self._publish(report.to_payload())
        return report

    def _publish(self, payload: Dict[str, Any]) -> None:
        with self._publish_lock:  # the newest models_state is the one published last
            # Only appliances that run fleet models say so: the reported message stays as it was for the rest.
            state = self._models_state() if self._models_state is not None else None
            if state:
                payload = {**payload, "models_state": state}
            self._publish_reported(payload)

    def republish(self) -> None:
        """The last report again with the current ``models_state`` (a model's state changed).

        Before any desired version was acted on, that is version 0, applied: the starting point
        the fleet service counts from, which settles none of its rollouts.
        """
        report = self._last_report
        if report is None:
            report = ConfigReport(0, APPLIED, (), self._clock())
        self._publish(report.to_payload())


def start_fleet_agent(appliance: ApplianceFleetLink, changes: ConfigChanges, config_path: Path,
                      models_state: Optional[ModelsState] = None) -> Optional[FleetAgent]:
    """Wire the fleet side to ``appliance`` (its four calls of ``ApplianceFleetLink``); None when remote configuration is off.

    The broker is probed for anonymous access in any case (on a thread of its own, it may take
    seconds), so the status warns about an open broker whether or not remote configuration is on.
    """
    gate = DesiredGate(changes.current)
    appliance.on_remote_config_report(gate.report)
    threading.Thread(target=gate.probe_broker, name="fleet:probe", daemon=True).start()
    config = changes.current()
    if not config.fleet.remote_config:
        log.info("remote configuration is off (fleet.remote_config: false): R/config/desired is not subscribed to")
        return None
    how = ("signed with fleet.desired_key" if config.fleet.desired_key
           else "from a broker that requires a login" if config.mqtt.username else "(none: nothing authenticates them)")
    log.info("remote configuration is on: acting on desired configurations %s", how)
    agent = FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), appliance.publish_config_reported, gate=gate,
                       models_state=models_state.snapshot if models_state is not None else None,
                       refetch=appliance.refetch_config_desired, link_up=appliance.mqtt_connected)
    if models_state is not None:
        models_state.on_change(agent.republish)
    appliance.on_config_desired(agent.on_desired)
    return agent.start()


__all__ = ["FleetAgent", "scrub", "start_fleet_agent"]
