"""The fleet detector factory with several models: each model with an ``artifact`` fetched on its own,
and one that fell back to its path at start asked for again until the fleet service answers.

A real ``Stager`` and ``FleetClient`` against a loopback port nobody listens on (the fleet
service away); the detector made is a marker, since only which section it was made from matters.
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from edge_app.config.file import parse_config
from edge_app.detect.base import DetectorError
from edge_app.fleet_agent.artifacts.models import FleetModels
from edge_app.fleet_agent.artifacts.refetch import Refetch
from edge_app.fleet_agent.artifacts.stage import Stager, make_client
from edge_app.fleet_agent.artifacts.state import ModelsState
from testkit.net import free_port
from testkit.waiting import wait_for


def _config(tmp_path, plates_version: str, port: int = 0):
    return parse_config({
        "device_id": "edge-b",
        "cameras": [{"id": "yard", "source": "test://bars", "model": "general"},
                    {"id": "gate", "source": "test://bars", "model": "plates"}],
        "models": [{"name": "general", "path": "models/general.onnx", "engine_dir": str(tmp_path),
                    "artifact": {"name": "people", "version": "1"}},
                   {"name": "plates", "path": "models/plates.onnx", "engine_dir": str(tmp_path),
                    "artifact": {"name": "gate", "version": plates_version}}],
        "fleet": {"url": f"http://127.0.0.1:{port or free_port()}", "token": "device-token-0123456789abcdef",
                  "desired_key": "k" * 40},
    })


def test_each_fleet_model_falls_back_once_and_retries_against_its_own_section(tmp_path):
    current = {"config": _config(tmp_path, "1")}
    state = ModelsState()
    made = []
    models = FleetModels(lambda model, **options: made.append(model.path) or model.path, lambda: current["config"],
                         state, retry_first_s=0.05)
    general, plates = current["config"].models
    # At start each model's first fetch failing falls back to its own path: one model's start is
    # not another's.
    assert models(general) == "models/general.onnx"
    assert models(plates) == "models/plates.onnx"
    assert set(state.snapshot()) == {"people", "gate"}
    assert "running models/plates.onnx until it is fetched" in state.get("gate").reason

    # A later change of plates keeps trying, until the configuration asks plates for another version.
    errors = []

    def change() -> None:
        try:
            models(plates, cancel=threading.Event())
        except DetectorError as err:
            errors.append(str(err))

    worker = threading.Thread(target=change, name="test:change")
    worker.start()
    try:
        wait_for(lambda: "trying again" in (state.get("gate").reason or ""), 10, "plates to retry")
        current["config"] = _config(tmp_path, "2")
        worker.join(10)
        assert not worker.is_alive()
    finally:
        models.close()
        worker.join(10)
    assert errors and "another version was asked for meanwhile" in errors[0]
    assert made == ["models/general.onnx", "models/plates.onnx"]
    assert state.get("people").version == "1"



# -- a model that fell back to its path at start is fetched later (artifacts.refetch) -----------------


def _retrying(config, first_s: float, max_s: float):
    return config.model_copy(update={"fleet": config.fleet.model_copy(
        update={"fallback_retry_s": first_s, "fallback_retry_max_s": max_s})})


def _refetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("fleet:refetch:")]


class _Fleet404(BaseHTTPRequestHandler):
    """A fleet service that answers, with a refusal: an answer all the same."""

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_model_that_fell_back_is_loaded_again_once_the_fleet_answers_and_only_then(tmp_path):
    current = {"config": _retrying(_config(tmp_path, "1"), 1, 1)}
    state = ModelsState()
    reloads, clients = [], []
    stager = Stager(lambda: current["config"], state,
                    client_factory=lambda config: clients.append(1) or make_client(config))
    models = FleetModels(lambda model, **options: model.path, lambda: current["config"], state, stager=stager,
                         reload=lambda name, model: reloads.append((name, model)) or True)
    general, plates = current["config"].models
    server = None
    try:
        assert models(general) == "models/general.onnx" and models(plates) == "models/plates.onnx"
        assert "running models/plates.onnx until it is fetched, trying again in 1 s" in state.get("gate").reason
        assert sorted(t.name for t in _refetch_threads()) == ["fleet:refetch:gate", "fleet:refetch:people"]
        wait_for(lambda: len(clients) >= 6, 10, "two more attempts of each model")  # the first: at start
        assert reloads == []  # nobody answers: nothing is loaded again
        assert len(_refetch_threads()) == 2

        port = int(current["config"].fleet.url.rsplit(":", 1)[1])
        server = ThreadingHTTPServer(("127.0.0.1", port), _Fleet404)
        threading.Thread(target=server.serve_forever, name="test:fleet", daemon=True).start()
        wait_for(lambda: len(reloads) == 2 and not _refetch_threads(), 10, "both models handed to the appliance")
        assert sorted(reloads, key=lambda r: r[0]) == [("general", general), ("plates", plates)]
    finally:
        models.close()
        if server is not None:
            server.shutdown()
            server.server_close()


def test_a_stop_ends_a_refetch_in_the_middle_of_its_wait(tmp_path):
    config = _retrying(_config(tmp_path, "1"), 3600, 3600)
    models = FleetModels(lambda model, **options: model.path, lambda: config, ModelsState(),
                         reload=lambda name, model: True)
    models(config.models[0])
    threads = _refetch_threads()
    assert [t.name for t in threads] == ["fleet:refetch:people"]
    models.close()
    threads[0].join(2)
    assert not threads[0].is_alive()


def test_a_refetch_ends_when_the_section_changes_or_another_load_takes_over(tmp_path):
    current = {"config": _retrying(_config(tmp_path, "1"), 1, 1)}
    reloads = []
    models = FleetModels(lambda model, **options: model.path, lambda: current["config"], ModelsState(),
                         reload=lambda name, model: reloads.append(name) or True, retry_first_s=0.05)
    general, plates = current["config"].models
    models(general)
    models(plates)
    # plates: another version rolled out; its refetch sees it at its next attempt and ends.
    current["config"] = _retrying(_config(tmp_path, "2"), 1, 1)
    # general: a later load of the same fleet model (here, of the same section) fetches it itself.
    cancel = threading.Event()
    loader = threading.Thread(target=lambda: _swallow(lambda: models(general, cancel=cancel)), name="test:load")
    loader.start()
    try:
        wait_for(lambda: not _refetch_threads(), 5, "both refetches to end")
        assert reloads == []
    finally:
        models.close()
        cancel.set()
        loader.join(5)


def test_a_refetch_asks_again_while_the_appliance_is_still_starting(tmp_path):
    config = _retrying(_config(tmp_path, "1"), 1, 1)
    answers = [False, True]  # still starting, then started
    asked = []
    refetch = Refetch(config.models[0], "the fleet service cannot be reached", config=lambda: config,
                      state=ModelsState(), probe=lambda model: None,
                      reload=lambda name, model: asked.append(name) or answers.pop(0)).start()
    try:
        assert refetch.join(10)
    finally:
        refetch.cancel()
    assert asked == ["general", "general"]


def _swallow(load):
    """True when ``load`` returned, False when it raised DetectorError."""
    try:
        load()
    except DetectorError:
        return False
    return True


def _serve_404(config):
    port = int(config.fleet.url.rsplit(":", 1)[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), _Fleet404)
    threading.Thread(target=server.serve_forever, name="test:fleet", daemon=True).start()
    return server


def _waits_reported(state, name):
    """Each "trying again in N s" of ``name``'s reason, in order."""
    seen = []

    def listen():
        reason = (state.get(name).reason or "") if state.get(name) is not None else ""
        if "trying again in " in reason:
            wait_s = int(reason.rsplit("trying again in ", 1)[1].split(" ")[0])
            seen.append(wait_s)
    state.on_change(listen)
    return seen


def test_a_refusal_at_start_is_asked_again_ever_less_often(tmp_path):
    """The fleet refuses the version (404: not uploaded yet) at start: the path runs, and the version
    is asked for again, each wait twice the one before, until the operator mends the fleet."""
    current = {"config": _retrying(_config(tmp_path, "1"), 1, 4)}
    state = ModelsState()
    waits = _waits_reported(state, "gate")
    loads = []
    holder = {}

    def reload(name, model):  # the appliance's background model change: the same factory, not first
        loads.append(name)
        threading.Thread(target=lambda: _swallow(lambda: holder["models"](model, cancel=threading.Event())),
                         name="test:reload", daemon=True).start()
        return True

    server = _serve_404(current["config"])
    models = holder["models"] = FleetModels(lambda model, **options: model.path, lambda: current["config"], state,
                                            reload=reload)
    try:
        assert models(current["config"].models[1]) == "models/plates.onnx"
        assert "404" in state.get("gate").reason and "running models/plates.onnx" in state.get("gate").reason
        wait_for(lambda: len(loads) >= 4, 30, "four loads of the refused version")
        assert waits[:4] == [1, 2, 4, 4], waits
    finally:
        models.close()
        server.shutdown()
        server.server_close()


def test_the_version_that_fell_back_is_asked_for_again_after_a_failed_rollout(tmp_path):
    """Version 1 fell back at start; a rollout of version 2 fails (the fleet refuses it) and the
    appliance reverts the section to version 1: version 1 must still be fetched later."""
    port = free_port()
    current = {"config": _retrying(_config(tmp_path, "1", port), 1, 1)}
    reloads = []
    models = FleetModels(lambda model, **options: model.path, lambda: current["config"], ModelsState(),
                         reload=lambda name, model: reloads.append((name, model)) or True)
    plates_1 = current["config"].models[1]
    assert models(plates_1) == "models/plates.onnx"  # the service is away: fell back
    server = _serve_404(current["config"])
    try:
        current["config"] = _retrying(_config(tmp_path, "2", port), 1, 1)  # the rollout
        assert not _swallow(lambda: models(current["config"].models[1], cancel=threading.Event()))
        current["config"] = _retrying(_config(tmp_path, "1", port), 1, 1)  # the appliance's revert
        wait_for(lambda: reloads, 10, "version 1 to be loaded again")
        assert reloads == [("plates", plates_1)]
    finally:
        models.close()
        server.shutdown()
        server.server_close()
