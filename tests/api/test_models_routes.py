"""The config and camera routes with several models: a camera names a model that exists, models
are added beside the ones there are, and a refusal names the key and changes nothing."""
import shutil

from edge_app.config.file import load_config


def locs(response):
    return [detail["loc"] for detail in response.json()["details"]]


def test_a_camera_moved_to_a_model_that_does_not_exist_is_refused_naming_the_key(make_api, model_path):
    api = make_api({"models": [{"name": "plates", "path": str(model_path)}]})
    before = api.config_path.read_bytes()

    response = api.request("PATCH", "/api/v1/cameras/back", json={"model": "parcels"})

    assert response.status_code == 400, response.text
    assert locs(response) == ["cameras.1.model"]
    assert "no model of that name (models: default, plates)" in response.json()["details"][0]["msg"]
    assert api.config_path.read_bytes() == before

    moved = api.request("PATCH", "/api/v1/cameras/back", json={"model": "plates"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["model"] == "plates"
    assert {c.id: c.model for c in load_config(api.config_path).cameras} == {"front": "default", "back": "plates"}


def test_models_added_through_the_api_stay_beside_the_models_there_are(make_api, model_path, tmp_path):
    api = make_api()
    beside = model_path.parent / model_path.name  # the folder of the configured model
    elsewhere = tmp_path / "elsewhere" / "other.onnx"
    elsewhere.parent.mkdir()
    shutil.copy(model_path, elsewhere)
    engines = api.changes.current().model.engine_dir

    refused = api.request("PATCH", "/api/v1/config", json={
        "models": [{"name": "other", "path": str(elsewhere), "engine_dir": engines}]})
    assert refused.status_code == 400, refused.text
    assert locs(refused) == ["models.0.path"]

    named_twice = api.request("PATCH", "/api/v1/config", json={
        "models": [{"name": "default", "path": str(beside), "engine_dir": engines}]})
    assert named_twice.status_code == 400 and locs(named_twice) == ["models.0.name"]

    added = api.request("PATCH", "/api/v1/config", json={
        "models": [{"name": "second", "path": str(beside), "engine_dir": engines}]})
    assert added.status_code == 200, added.text
    assert list(load_config(api.config_path).model_configs()) == ["default", "second"]
