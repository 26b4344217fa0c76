"""/metrics, /api/openapi.json and the dashboard page."""
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from edge_app.api import create_app
from edge_app.reporting.stage_times import StageTotal

SPEC_ROUTES = [
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/api/v1/status"),
    ("get", "/api/v1/config"),
    ("put", "/api/v1/config"),
    ("patch", "/api/v1/config"),
    ("get", "/api/v1/cameras"),
    ("post", "/api/v1/cameras"),
    ("patch", "/api/v1/cameras/{camera_id}"),
    ("delete", "/api/v1/cameras/{camera_id}"),
    ("get", "/api/v1/cameras/{camera_id}/snapshot.jpg"),
    ("get", "/api/v1/cameras/{camera_id}/detections"),
    ("get", "/api/v1/cameras/{camera_id}/stream.mjpg"),
    ("get", "/metrics"),
    ("get", "/api/openapi.json"),
    ("get", "/api/v1/events"),
    ("get", "/api/v1/events/{event_id}"),
    ("get", "/api/v1/events/{event_id}/snapshot.jpg"),
    ("delete", "/api/v1/events/{event_id}"),
    ("get", "/api/v1/counts"),
]


def samples_of(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_metrics_parse_and_carry_per_camera_series(api):
    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    samples = samples_of(response.text)
    front = (("camera", "front"),)
    assert samples[("edge_app_camera_fps", front)] == 12.5
    assert samples[("edge_app_camera_frames_captured_total", front)] == 2
    assert samples[("edge_app_camera_frames_analyzed_total", front)] == 1
    assert samples[("edge_app_camera_frames_dropped_total", front)] == 1
    assert samples[("edge_app_camera_reconnects_total", front)] == 0
    assert samples[("edge_app_camera_state", (("camera", "front"), ("state", "streaming")))] == 1
    assert samples[("edge_app_camera_state", (("camera", "back"), ("state", "streaming")))] == 0
    assert samples[("edge_app_camera_state", (("camera", "back"), ("state", "connecting")))] == 1
    assert samples[("edge_app_mqtt_connected", ())] == 1
    assert samples[("edge_app_mqtt_messages_published_total", ())] == 42
    assert samples[("edge_app_mqtt_messages_queued", ())] == 3
    assert samples[("edge_app_mqtt_lag_seconds", ())] == 0.0
    assert samples[("edge_app_mqtt_messages_dropped_total", ())] == 1
    assert samples[("edge_app_pipeline_fps", ())] == 24.5
    assert samples[("edge_app_pipeline_latency_seconds", (("quantile", "0.5"),))] == pytest.approx(0.031)
    assert samples[("edge_app_pipeline_latency_seconds", (("quantile", "0.99"),))] == pytest.approx(0.080)
    assert any(name == "edge_app_info" and dict(labels)["device_id"] == "edge-test" for name, labels in samples)


def test_metrics_are_read_at_scrape_time_and_apps_do_not_share_a_registry(make_api, bus_image):
    from tests.api.conftest import bus_detections

    first, second = make_api(), make_api()
    for _ in range(3):
        first.service.publish("front", bus_image, bus_detections())
    assert samples_of(first.get("/metrics").text)[("edge_app_camera_frames_analyzed_total", (("camera", "front"),))] == 4
    assert samples_of(second.get("/metrics").text)[("edge_app_camera_frames_analyzed_total", (("camera", "front"),))] == 1


def test_metrics_in_openmetrics_format_on_request(api):
    response = api.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


def test_openapi_describes_every_spec_route(api):
    response = api.get("/api/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    for method, path in SPEC_ROUTES:
        assert method in document["paths"].get(path, {}), f"{method.upper()} {path} is not documented"
    assert "cameras" in document["components"]["schemas"]["AppConfig"]["properties"]


#: the routes of the app that serve the dashboard's files and are no part of the API (the page itself, ``/``, is)
NOT_API = {
    "dashboard.static": "the dashboard's own CSS and JavaScript",
    "dashboard.shared_static": "the CSS and JavaScript the dashboard shares with the fleet page",
}


def test_openapi_documents_exactly_the_routes_of_the_app(api):
    """Route by route, method by method: what the blueprints serve is what the document generated from their ROUTES says."""
    document = api.get("/api/openapi.json").json()
    app = create_app(api.service, api.changes, api.deletion)
    rules = list(app.url_map.iter_rules())
    assert set(NOT_API) <= {rule.endpoint for rule in rules}, "NOT_API names a route the app no longer has"
    served = set()
    for rule in rules:
        if rule.endpoint in NOT_API:
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        served |= {(m.lower(), path) for m in rule.methods - {"HEAD", "OPTIONS"}}
    documented = {(m, p) for p, ops in document["paths"].items() for m in ops}
    assert sorted(served - documented) == [], "served but missing from the ROUTES the document is generated from (edge_app/api/openapi_spec.py)"
    assert sorted(documented - served) == [], "in the ROUTES of edge_app/api/openapi_spec.py but served by no blueprint"


def test_openapi_declares_every_path_parameter_of_every_operation(api):
    paths = api.get("/api/openapi.json").json()["paths"]
    for path, operations in paths.items():
        in_path = set(re.findall(r"{([^}]+)}", path))
        for method, operation in operations.items():
            declared = {param["name"] for param in operation.get("parameters", []) if param["in"] == "path"}
            assert declared == in_path, f"{method.upper()} {path}"


def collect_refs(node, found):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.add(node["$ref"])
        for value in node.values():
            collect_refs(value, found)
    elif isinstance(node, list):
        for value in node:
            collect_refs(value, found)
    return found


def test_openapi_references_all_resolve(api):
    document = api.get("/api/openapi.json").json()
    refs = collect_refs(document, set())
    assert "#/components/schemas/CameraConfig" in refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in document["components"]["schemas"], ref


def test_dashboard_page_and_its_assets(secured_api):
    response = secured_api.get("/")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    html = response.text
    assert "<title>edge-app</title>" in html
    assets = re.findall(r'(?:src|href)="(static/[^"]+)"', html)
    scripts = ["static/shared/page.js", "static/logic.js", "static/boxes.js", "static/liveview.js", "static/player.js",
               "static/trackoverlay.js", "static/events.js",
               "static/review.js", "static/livegrid.js", "static/recordings.js", "static/zone_rules.js",
               "static/zone_figures.js", "static/areas.js", "static/speed.js", "static/cameras.js",
               "static/config.js", "static/profiles.js", "static/sections.js", "static/dashboard.js"]
    # page.js comes first (the helpers every file uses); dashboard.js last: the views in the other
    # files register themselves before it starts.
    assert [asset for asset in assets if asset.endswith(".js")] == scripts
    assert [asset for asset in assets if asset.endswith(".css")] == ["static/shared/page.css", "static/dashboard.css"]
    for asset in assets:
        kind = "javascript" if asset.endswith(".js") else "text/css"
        asset_response = secured_api.get("/" + asset)
        assert asset_response.status_code == 200 and kind in asset_response.headers["Content-Type"], asset
    assert "Authorization" in secured_api.get("/static/dashboard.js").text
    # Nothing from elsewhere (the appliance is often offline), and no request for /favicon.ico.
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html)
    assert '<link rel="icon" href="data:,">' in html


#: what the page's JavaScript and CSS may weigh together, as served (a Jetson on a slow link)
DASHBOARD_ASSETS_MAX_BYTES = 150_000


def test_the_dashboard_javascript_and_css_stay_small(secured_api):
    html = secured_api.get("/").text
    assets = re.findall(r'(?:src|href)="(static/[^"]+\.(?:js|css))"', html)
    sizes = {asset: len(secured_api.get("/" + asset).content) for asset in assets}
    assert all(sizes.values()), sizes
    total = sum(sizes.values())
    assert total < DASHBOARD_ASSETS_MAX_BYTES, f"{total} bytes of JavaScript and CSS: {sizes}"


@pytest.mark.parametrize("status", ["400", "408", "413", "414", "431"])
def test_openapi_documents_what_the_server_refuses_on_every_route(api, status):
    document = api.get("/api/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert status in operation["responses"], f"{method.upper()} {path} lacks {status}"


def test_openapi_documents_throttling_on_token_protected_routes(api):
    document = api.get("/api/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            secured = operation.get("security") != []
            assert ("429" in operation["responses"]) is secured, f"{method.upper()} {path}"
            if secured:
                assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_metrics_carry_the_time_per_stage_of_each_camera(api):
    api.service.stage_totals = [StageTotal("front", "tracking", 0.5, 200), StageTotal("front", "mqtt", 0.1, 200)]
    samples = samples_of(api.get("/metrics").text)
    tracking = (("camera", "front"), ("stage", "tracking"))
    assert samples[("edge_app_stage_seconds_sum", tracking)] == 0.5
    assert samples[("edge_app_stage_seconds_count", tracking)] == 200
    assert samples[("edge_app_stage_seconds_count", (("camera", "front"), ("stage", "mqtt")))] == 200


@pytest.mark.parametrize("processes, restarts", [(0, 0), (4, 0), (2, 3)])
def test_metrics_and_status_say_how_many_tracker_processes_run_and_how_often_one_was_given_up(api, processes,
                                                                                              restarts):
    from edge_app.reporting.protocol import TrackerProcessesReport

    api.service.tracking = TrackerProcessesReport(processes=processes, restarts=restarts)
    samples = samples_of(api.get("/metrics").text)
    assert samples[("edge_app_tracker_processes", ())] == processes
    assert samples[("edge_app_tracker_process_restarts_total", ())] == restarts
    assert api.get("/api/v1/status").json()["tracking"] == {"processes": processes, "restarts": restarts}


def test_metrics_carry_the_cpu_of_the_appliances_threads_by_group(api):
    samples = samples_of(api.get("/metrics").text)
    groups = {dict(labels)["group"]: value for (name, labels), value in samples.items()
              if name == "edge_app_cpu_seconds_total"}
    assert {"main", "native"} <= set(groups) and groups["main"] > 0  # this test's own thread has run
    assert all(value >= 0 for value in groups.values())
