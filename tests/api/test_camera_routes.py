"""POST /api/v1/cameras, PATCH and DELETE /api/v1/cameras/<id>: one camera at a time, with every
rule of the config routes (secrets, schema, API change policy, runtime checks), all or nothing."""
import json

import pytest

from edge_app.config.file import ConfigError, Problem, load_config
from tests.api.conftest import CAMERA_PASSWORD, MQTT_PASSWORD, TOKEN

FRONT_SOURCE = f"rtsp://admin:{CAMERA_PASSWORD}@10.0.0.5:554/stream1"
FRONT_MASKED = "rtsp://admin:***@10.0.0.5:554/stream1"


class Unchanged:
    """The config file, the running configuration and the apply count, to check a refusal left them alone."""

    def __init__(self, api):
        self.api = api
        self.file_bytes = api.config_path.read_bytes()
        self.config = api.changes.current()
        self.apply_calls = api.service.applied.apply_calls

    def check(self):
        assert self.api.config_path.read_bytes() == self.file_bytes
        assert self.api.changes.current() == self.config
        assert self.api.service.applied.apply_calls == self.apply_calls


def locs(response):
    return [detail["loc"] for detail in response.json()["details"]]


def test_post_adds_one_camera_and_keeps_the_others_and_their_secrets(api):
    response = api.request("POST", "/api/v1/cameras", json={"id": "side", "source": "test://box", "fps_limit": 2})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["id"] == "side" and body["source"] == "test://box" and body["fps_limit"] == 2
    assert body["detect"] is True  # defaults filled in: the answer is the camera as saved
    assert response.headers["Location"] == "/api/v1/cameras/side"
    saved = load_config(api.config_path)
    assert [cam.id for cam in saved.cameras] == ["front", "back", "side"]
    # The other cameras went through the masked view and came back whole.
    assert saved.cameras[0].source == FRONT_SOURCE
    assert saved.mqtt.password == MQTT_PASSWORD
    assert api.changes.current() == saved
    assert [cam["id"] for cam in api.get("/api/v1/cameras").json()] == ["front", "back", "side"]


def test_post_answers_credentials_masked(api):
    source = "rtsp://viewer:v1ewer-pw@10.0.0.9:554/main"
    response = api.request("POST", "/api/v1/cameras", json={"id": "gate", "source": source})
    assert response.status_code == 201, response.text
    assert "v1ewer-pw" not in response.text
    assert response.json()["source"] == "rtsp://viewer:***@10.0.0.9:554/main"
    assert load_config(api.config_path).camera("gate").source == source


def test_post_of_an_existing_id_is_409_and_changes_nothing(api):
    unchanged = Unchanged(api)
    response = api.request("POST", "/api/v1/cameras", json={"id": "front", "source": "test://box"})
    assert response.status_code == 409
    assert "front" in response.json()["error"]
    unchanged.check()


@pytest.mark.parametrize(
    "camera, loc",
    [
        ({"id": "side", "source": "test://box", "fps_limit": -1}, "cameras.2.fps_limit"),
        ({"id": "bad id!", "source": "test://box"}, "cameras.2.id"),
        ({"id": "side"}, "cameras.2.source"),
        ({"id": "side", "source": "test://box", "colour": "red"}, "cameras.2.colour"),
        (["side", "test://box"], "cameras.2"),
    ],
)
def test_post_of_an_invalid_camera_is_400_located_in_the_full_config(api, camera, loc):
    unchanged = Unchanged(api)
    response = api.request("POST", "/api/v1/cameras", json=camera)
    assert response.status_code == 400
    assert loc in locs(response)
    unchanged.check()


def test_post_cannot_copy_a_masked_source_to_a_new_camera(api):
    # The new camera would log in to the same place with a password its client never saw.
    unchanged = Unchanged(api)
    response = api.request("POST", "/api/v1/cameras", json={"id": "copy", "source": FRONT_MASKED})
    assert response.status_code == 400
    assert locs(response) == ["cameras.2.source"]
    unchanged.check()


def test_post_of_a_gst_source_is_refused_by_the_api_policy(api):
    unchanged = Unchanged(api)
    response = api.request("POST", "/api/v1/cameras", json={"id": "pipe", "source": "gst:videotestsrc ! appsink"})
    assert response.status_code == 400
    assert locs(response) == ["cameras.2.source"]
    assert "allow_unsafe_sources" in response.json()["details"][0]["msg"]
    unchanged.check()


def test_patch_changes_one_field_of_one_camera(api):
    response = api.request("PATCH", "/api/v1/cameras/back", json={"fps_limit": 5})
    assert response.status_code == 200, response.text
    assert response.json()["id"] == "back" and response.json()["fps_limit"] == 5
    saved = load_config(api.config_path)
    assert [cam.id for cam in saved.cameras] == ["front", "back"]
    assert saved.camera("back").fps_limit == 5
    assert saved.camera("front").source == FRONT_SOURCE
    assert api.changes.current() == saved


def test_patch_of_a_camera_with_credentials_keeps_them_and_answers_them_masked(api):
    response = api.request("PATCH", "/api/v1/cameras/front", json={"detect": False},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text
    assert response.json()["source"] == FRONT_MASKED and CAMERA_PASSWORD not in response.text
    saved = load_config(api.config_path).camera("front")
    assert saved.detect is False and saved.source == FRONT_SOURCE


def test_patch_null_puts_a_key_back_to_its_default(api):
    assert api.request("PATCH", "/api/v1/cameras/back", json={"fps_limit": 3}).status_code == 200
    response = api.request("PATCH", "/api/v1/cameras/back", json={"fps_limit": None})
    assert response.status_code == 200, response.text
    assert load_config(api.config_path).camera("back").fps_limit == 0


def test_patch_of_the_third_camera_locates_its_problem_in_the_full_config(api):
    assert api.request("POST", "/api/v1/cameras", json={"id": "side", "source": "test://box"}).status_code == 201
    unchanged = Unchanged(api)
    response = api.request("PATCH", "/api/v1/cameras/side", json={"fps_limit": "fast"})
    assert response.status_code == 400
    body = response.json()
    assert locs(response) == ["cameras.2.fps_limit"]
    assert "cameras.2.fps_limit" in body["error"]
    assert all(set(detail) == {"loc", "msg"} for detail in body["details"])
    unchanged.check()


@pytest.mark.parametrize(
    "patch, loc",
    [
        ({"fps_limit": -1}, "cameras.1.fps_limit"),
        ({"source": ""}, "cameras.1.source"),
        ({"zones": [{"name": "z", "polygon": [[0, 0], [1, 1]]}]}, "cameras.1.zones.0.polygon"),
        ({"unknown": 1}, "cameras.1.unknown"),
    ],
)
def test_patch_invalid_is_400_with_loc_and_leaves_the_file_alone(api, patch, loc):
    unchanged = Unchanged(api)
    response = api.request("PATCH", "/api/v1/cameras/back", json=patch)
    assert response.status_code == 400
    assert loc in locs(response)
    unchanged.check()


def test_patch_that_introduces_a_gst_source_is_refused_by_the_api_policy(api):
    unchanged = Unchanged(api)
    response = api.request("PATCH", "/api/v1/cameras/back", json={"source": "gst:videotestsrc ! appsink"})
    assert response.status_code == 400
    assert locs(response) == ["cameras.1.source"]
    assert "allow_unsafe_sources" in response.json()["details"][0]["msg"]
    unchanged.check()


def test_patch_moving_a_camera_to_another_host_must_carry_its_password_again(api):
    unchanged = Unchanged(api)
    moved_masked = "rtsp://admin:***@203.0.113.7:554/stream1"
    response = api.request("PATCH", "/api/v1/cameras/front", json={"source": moved_masked})
    assert response.status_code == 400
    assert locs(response) == ["cameras.0.source"]
    assert "secret again" in response.json()["details"][0]["msg"]
    assert CAMERA_PASSWORD not in response.text
    unchanged.check()
    # Whoever knows the password may move the camera.
    moved = f"rtsp://admin:{CAMERA_PASSWORD}@203.0.113.7:554/stream1"
    response = api.request("PATCH", "/api/v1/cameras/front", json={"source": moved})
    assert response.status_code == 200, response.text
    assert load_config(api.config_path).camera("front").source == moved


def test_patch_keeping_the_host_may_re_use_the_masked_password(api):
    response = api.request("PATCH", "/api/v1/cameras/front", json={"source": "rtsp://admin:***@10.0.0.5:554/stream2"})
    assert response.status_code == 200, response.text
    assert load_config(api.config_path).camera("front").source == f"rtsp://admin:{CAMERA_PASSWORD}@10.0.0.5:554/stream2"


def test_patch_renaming_to_another_cameras_id_is_409(api):
    unchanged = Unchanged(api)
    response = api.request("PATCH", "/api/v1/cameras/back", json={"id": "front"})
    assert response.status_code == 409
    unchanged.check()


def test_patch_may_rename_a_camera(api):
    response = api.request("PATCH", "/api/v1/cameras/back", json={"id": "yard"})
    assert response.status_code == 200, response.text
    assert response.json()["id"] == "yard"
    assert [cam.id for cam in load_config(api.config_path).cameras] == ["front", "yard"]


def test_delete_removes_one_camera(api):
    response = api.request("DELETE", "/api/v1/cameras/back")
    assert response.status_code == 204
    assert response.content == b""
    saved = load_config(api.config_path)
    assert [cam.id for cam in saved.cameras] == ["front"]
    assert saved.camera("front").source == FRONT_SOURCE
    assert [cam["id"] for cam in api.get("/api/v1/cameras").json()] == ["front"]
    assert api.request("DELETE", "/api/v1/cameras/back").status_code == 404


@pytest.mark.parametrize("method, body", [("PATCH", {"fps_limit": 1}), ("DELETE", None)])
def test_unknown_camera_is_404_and_changes_nothing(api, method, body):
    unchanged = Unchanged(api)
    response = api.request(method, "/api/v1/cameras/nope", json=body)
    assert response.status_code == 404
    assert "nope" in response.json()["error"]
    unchanged.check()


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", "/api/v1/cameras", {"id": "side", "source": "test://box"}),
        ("PATCH", "/api/v1/cameras/back", {"fps_limit": 1}),
        ("DELETE", "/api/v1/cameras/back", None),
    ],
)
def test_camera_edits_need_the_token(secured_api, method, path, body):
    unchanged = Unchanged(secured_api)
    for headers, query in (({}, ""), ({"Authorization": "Bearer wrong"}, ""), ({}, f"?token={TOKEN}")):
        response = secured_api.request(method, path + query, json=body, headers=headers)
        assert response.status_code == 401, (headers, query)
    unchanged.check()
    response = secured_api.request(method, path, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code in (200, 201, 204), response.text


@pytest.mark.parametrize("method, path", [("POST", "/api/v1/cameras"), ("PATCH", "/api/v1/cameras/back")])
def test_camera_edits_read_the_body_like_the_config_routes(api, method, path):
    unchanged = Unchanged(api)
    assert api.request(method, path, data=b"fps_limit=1", headers={"Content-Type": "text/plain"}).status_code == 415
    assert api.request(method, path, data=b"{", headers={"Content-Type": "application/json"}).status_code == 400
    big = b'{"id": "side", "source": "test://' + b"x" * 70000 + b'"}'
    response = api.request(method, path, data=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert "max_body_bytes" in response.json()["error"]
    unchanged.check()


def test_the_whole_list_patch_of_the_config_route_is_unchanged(api):
    # RFC 7396 replaces lists: the per-camera routes exist because this stays as it is.
    response = api.request("PATCH", "/api/v1/config", json={"cameras": [{"id": "back", "fps_limit": 5}]})
    assert response.status_code == 400
    assert "cameras.0.source" in locs(response)


def test_openapi_describes_the_camera_edits(api):
    paths = api.get("/api/openapi.json").json()["paths"]
    post = paths["/api/v1/cameras"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CameraConfig"}
    assert {"201", "400", "401", "409", "413", "415"} <= set(post["responses"])
    patch = paths["/api/v1/cameras/{camera_id}"]["patch"]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    assert patch["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CameraConfig"}
    # A refused camera has details; a body that is not JSON only the error sentence.
    assert patch["responses"]["400"]["content"]["application/json"]["schema"] == {
        "anyOf": [{"$ref": "#/components/schemas/ValidationError"}, {"$ref": "#/components/schemas/Error"}]}
    assert {"204", "404"} <= set(paths["/api/v1/cameras/{camera_id}"]["delete"]["responses"])


def test_camera_edits_are_checked_against_the_machine_like_config_writes(make_api, tmp_path):
    media = tmp_path / "media"
    media.mkdir()
    for name in ("a.mp4", "b.mp4"):
        (media / name).write_bytes(b"not opened by these tests")
    api = make_api({"cameras": [{"id": "clip", "source": str(media / "a.mp4")}]}, publish=False)
    unchanged = Unchanged(api)
    missing = api.request("POST", "/api/v1/cameras", json={"id": "clip2", "source": str(media / "missing.mp4")})
    assert missing.status_code == 400
    assert missing.json()["error"].startswith("the configuration cannot run here")
    assert locs(missing) == ["cameras.1.source"]
    elsewhere = api.request("POST", "/api/v1/cameras", json={"id": "clip2", "source": str(tmp_path / "config-0.yaml")})
    assert elsewhere.status_code == 400 and "allow_unsafe_sources" in elsewhere.json()["details"][0]["msg"]
    unchanged.check()
    beside = api.request("POST", "/api/v1/cameras", json={"id": "clip2", "source": str(media / "b.mp4")})
    assert beside.status_code == 201, beside.text


def test_a_camera_edit_the_appliance_cannot_apply_is_400_and_saves_nothing(api):
    file_bytes = api.config_path.read_bytes()
    api.service.applied.refuse_apply = ConfigError([Problem("cameras.1.source", "the capture backend refused it")])
    response = api.request("PATCH", "/api/v1/cameras/back", json={"fps_limit": 2})
    assert response.status_code == 400
    assert response.json()["error"].startswith("the configuration cannot be applied")
    assert locs(response) == ["cameras.1.source"]
    assert api.config_path.read_bytes() == file_bytes


@pytest.mark.parametrize("raw", [b'{"fps_limit": 1e400}', b'{"fps_limit": -1e400}', b'{"fps_limit": NaN}',
                                 b'{"fps_limit": Infinity}'])
def test_a_non_finite_number_is_refused_and_the_config_stays_valid_json(api, raw):
    unchanged = Unchanged(api)
    response = api.request("PATCH", "/api/v1/cameras/back", data=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert "not valid JSON" in response.json()["error"]
    unchanged.check()
    config = api.get("/api/v1/config")
    assert config.status_code == 200
    json.loads(config.text, parse_constant=lambda name: pytest.fail(f"{name} in GET /api/v1/config"))
