"""``edge-app run``: start the API, then hand the appliance to the Supervisor (start, systemd, stop within 5 s)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Optional

from edge_app.config.schema import AppConfig
from edge_app.config.file import remove_stale_temp_files
from edge_app.notify.clip_links import KEY_FILE_NAME, ClipLinks, LinkKeyError, load_or_create_key
from edge_app.opencv import opencv_problem
from edge_app.process.shutdown import StopSignals
from edge_app.process.systemd import SystemdNotifier

log = logging.getLogger(__name__)


#: how long a Python thread may hold the interpreter lock while others wait for it (Python's
#: default is 5 ms). The appliance's threads mostly wait (on the GPU, sockets, decoders) and
#: need the lock briefly when a wait ends; with the default, each such return could wait up to
#: 5 ms for another thread. Measured on an H200: 8 NVDEC decoders in threads gave 513 frames/s
#: at 5 ms and 1817 at 0.5 ms (docs/gpu-benchmark.md).
THREAD_SWITCH_INTERVAL_S = 0.0005


def tune_interpreter() -> None:
    """Process-wide settings the appliance runs with (``edge-app run``, and the benchmarks)."""
    sys.setswitchinterval(THREAD_SWITCH_INTERVAL_S)


def notification_links(config: AppConfig) -> Optional[ClipLinks]:
    """The signer of the notifications' clip links, when notifications carry links (a base URL and a
    target); its key is made at the first such start, in the state directory (the working directory,
    /var/lib/edge-app under systemd) beside the events, never in the configuration."""
    if not (config.notifications.base_url and config.notifications.targets):
        return None
    from edge_app.http_server.hosts import base_url_refused

    refused = base_url_refused(config)
    if refused:
        log.warning("notifications.base_url: %s", refused)
    return ClipLinks(load_or_create_key(Path(KEY_FILE_NAME)))


def run_appliance(config: AppConfig, config_path: Path, signals: StopSignals, notifier: SystemdNotifier) -> int:
    problem = opencv_problem()
    if problem:
        print(f"edge-app: {problem}", file=sys.stderr)
        return 1
    tune_interpreter()
    # Before any save of this run can start one: what saves cut short left holds the token too.
    remove_stale_temp_files(config_path)
    from edge_app.api import create_app
    from edge_app.http_server.server import ApiServer, TLSSetupError
    from edge_app.appliance.appliance import Appliance
    from edge_app.config.file import ConfigFile
    from edge_app.config_change.changes import ChangeRules
    from edge_app.fleet_agent.agent import start_fleet_agent
    from edge_app.appliance.supervise import Supervisor

    from edge_app.events.store import EventStore

    # Relative to the working directory, like every path of the configuration.
    store = (EventStore(Path(config.events.dir), config.events.retain_days, config.events.max_mb)
             if config.events.enabled else None)
    from edge_app.detect.factory import create_detector
    from edge_app.fleet_agent.artifacts.models import FleetModels
    from edge_app.fleet_agent.artifacts.state import ModelsState

    # Models from the fleet service (model.artifact) are fetched, verified and staged by the factory;
    # one that fell back to its path at start is loaded again by the appliance once it can be fetched.
    models_state = ModelsState()
    fleet_models = FleetModels(create_detector, lambda: appliance.current_config(), models_state,
                               reload=lambda name, model: appliance.reload_model(name, model))
    server: Optional[ApiServer] = None
    # One change path for the API, the fleet's R/config/desired, the detect switch and model
    # reloads: one set of rules, one lock, the one writer of the file. Whether a change may leave
    # no token depends on where the server listens (bound below).
    rules = ChangeRules(config_file=ConfigFile(config_path),
                        listening_hosts=lambda: server.listening_hosts() if server is not None else ())
    try:
        clip_links = notification_links(config)
    except (OSError, LinkKeyError) as err:
        print(f"edge-app: the notifications' link key: {err}", file=sys.stderr)
        return 1
    appliance = Appliance(config, event_store=store, detector_factory=fleet_models, record=True,
                          on_model_running=fleet_models.running, change_rules=rules, clip_links=clip_links)
    start_fleet_agent(appliance, appliance.changes, config_path, models_state)
    # The API comes up first so /api/v1/status can show a TensorRT engine build in progress.
    if config.api.enabled:
        server = ApiServer.from_config(create_app(appliance.reads, appliance.changes, appliance.event_deletion,
                                                  clip_links=appliance.clip_links), config.api,
                                       body_limit_bytes=lambda: appliance.current_config().api.max_body_bytes)
        try:
            server.start()
        except TLSSetupError as err:
            print(f"edge-app: {err}", file=sys.stderr)
            return 1
        except OSError as err:
            print(f"edge-app: cannot serve the API on {config.api.host}:{config.api.port}: {err.strerror or err}", file=sys.stderr)
            return 1
    try:
        return Supervisor(appliance, server, signals, notifier).run()
    finally:
        fleet_models.close()
