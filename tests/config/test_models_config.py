"""Several models: ``models`` (named) beside ``model`` (named default), ``cameras[].model``, and
what a change of one model touches (its reload, the API's path rules, the broker's allow-list)."""
import os

import pytest
import yaml

from edge_app.config.file import ConfigError, config_to_dict, merge_patch, parse_config
from edge_app.config.model_names import MAX_MODELS
from edge_app.config.policy import unsafe_changes
from edge_app.config.remote_policy import broker_problems
from edge_app.config_change.plan import plan_changes

CAM = {"id": "gate", "source": "rtsp://10.0.0.5/s"}
TWO = {
    "cameras": [{**CAM, "model": "plates"}, {"id": "yard", "source": "rtsp://10.0.0.6/s"}],
    "models": [{"name": "default", "path": "models/general.onnx"},
               {"name": "plates", "path": "models/plates.onnx", "conf_threshold": 0.5}],
}


def problems(data):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return {p.loc: p.msg for p in info.value.problems}


VALID = [
    ("the single model, as ever", {"cameras": [CAM], "model": {"path": "m.onnx"}}, {"gate": "default"}),
    ("two named models", TWO, {"gate": "plates", "yard": "default"}),
    ("model and models beside it", {"cameras": [CAM, {"id": "b", "source": "test://bars", "model": "parcels"}],
                                    "model": {"path": "m.onnx"}, "models": [{"name": "parcels", "path": "p.onnx"}]},
     {"gate": "default", "b": "parcels"}),
    ("models without a default, every camera names one",
     {"cameras": [{**CAM, "model": "a"}], "models": [{"name": "a", "path": "a.onnx"}, {"name": "b-2_x", "path": "b.onnx"}]},
     {"gate": "a"}),
    ("a model no camera uses", {"cameras": [], "models": [{"name": "spare", "path": "s.onnx"}]}, {}),
    ("the most models", {"cameras": [], "models": [{"name": f"m{i}", "path": f"m{i}.onnx"} for i in range(MAX_MODELS)]},
     {}),
]


@pytest.mark.parametrize("case, data, camera_models", VALID, ids=[c[0] for c in VALID])
def test_valid_models(case, data, camera_models):
    config = parse_config(data)
    assert {cam.id: cam.model for cam in config.cameras} == camera_models
    for camera in config.cameras:
        assert camera.model in config.model_configs()


INVALID = [
    ("no model at all", {"cameras": [CAM]}, "model", "a model is required"),
    ("an empty list and no model", {"cameras": [CAM], "models": []}, "model", "a model is required"),
    ("a name used twice", {"cameras": [], "models": [{"name": "a", "path": "a.onnx"}, {"name": "a", "path": "b.onnx"}]},
     "models.1.name", "already used by models.0"),
    ("model and a models entry named default",
     {"cameras": [], "model": {"path": "m.onnx"}, "models": [{"name": "default", "path": "d.onnx"}]},
     "models.0.name", "both define the model named 'default'"),
    ("a camera naming a model that does not exist", {**TWO, "cameras": [{**CAM, "model": "parcels"}]},
     "cameras.0.model", "no model of that name (models: default, plates)"),
    ("a camera left on default without a default model",
     {"cameras": [CAM], "models": [{"name": "a", "path": "a.onnx"}]}, "cameras.0.model", "set cameras[].model"),
    ("a name with a slash (a topic level, a path)", {"cameras": [], "models": [{"name": "a/b", "path": "a.onnx"}]},
     "models.0.name", "should match pattern"),
    ("a name too long", {"cameras": [], "models": [{"name": "x" * 33, "path": "a.onnx"}]}, "models.0.name",
     "should match pattern"),
    ("an empty name", {"cameras": [], "models": [{"name": "", "path": "a.onnx"}]}, "models.0.name", "should match"),
    ("a model without a name", {"cameras": [], "models": [{"path": "a.onnx"}]}, "models.0.name", "required"),
    ("a camera's model name with a space", {**TWO, "cameras": [{**CAM, "model": "a b"}]}, "cameras.0.model",
     "should match pattern"),
    ("too many models", {"cameras": [], "models": [{"name": f"m{i}", "path": f"m{i}.onnx"} for i in range(MAX_MODELS + 1)]},
     "models", "at most 8"),
    ("a model key that does not exist", {"cameras": [], "models": [{"name": "a", "path": "a.onnx", "thresh": 1}]},
     "models.0.thresh", "unknown key"),
    ("a models entry with a bad path", {"cameras": [], "models": [{"name": "a", "path": "a.txt"}]}, "models.0.path",
     "must end in .onnx"),
]


@pytest.mark.parametrize("case, data, loc, message", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_models_name_their_key(case, data, loc, message):
    found = problems(data)
    assert loc in found, found
    assert message in found[loc], found


def test_an_old_configuration_is_written_back_as_it_was():
    data = {"cameras": [CAM], "model": {"path": "m.onnx"}}
    written = config_to_dict(parse_config(data))
    assert "models" not in written and written["model"]["path"] == "m.onnx"
    assert parse_config(yaml.safe_load(yaml.safe_dump(written))) == parse_config(data)
    assert "model" not in config_to_dict(parse_config(TWO)), "no model: null beside models"


def _plan(old, patch):
    return plan_changes(parse_config(old), parse_config(merge_patch(old, patch)))


def test_a_change_of_one_model_reloads_that_model_alone():
    plan = _plan(TWO, {"models": [TWO["models"][0], {**TWO["models"][1], "path": "models/plates2.onnx"}]})
    assert plan.models_reloaded == ("plates",) and plan.reload_model
    plan = _plan(TWO, {"models": [TWO["models"][0], {**TWO["models"][1], "conf_threshold": 0.7}]})
    assert plan.models_reloaded == () and plan.models_retuned == ("plates",)
    plan = _plan(TWO, {"models": [TWO["models"][0]], "cameras": [{**CAM}]})
    assert plan.models_removed == ("plates",) and plan.models_reloaded == ()
    plan = _plan(TWO, {"models": TWO["models"] + [{"name": "new", "path": "models/n.onnx"}]})
    assert plan.models_reloaded == ("new",)


def test_moving_model_into_models_reloads_nothing_and_a_camera_changing_model_keeps_streaming():
    old = {"cameras": [CAM], "model": {"path": "models/general.onnx"}}
    new = {"cameras": [CAM], "models": [{"name": "default", "path": "models/general.onnx"}]}
    plan = plan_changes(parse_config(old), parse_config(new))
    assert plan.models_reloaded == () and plan.models_removed == ()
    plan = _plan(TWO, {"cameras": [{**CAM, "model": "default"}, TWO["cameras"][1]]})
    assert plan.cameras_changed == (), "capture goes on; only the pipeline its frames go to changes"


@pytest.fixture
def tree(tmp_path):
    for name in ("models/general.onnx", "models/plates.onnx", "secret/evil.onnx"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    return tmp_path


def _paths(tree, data):
    data = merge_patch(data, {})
    for model in data.get("models", []):
        model["path"] = str(tree / model["path"])
        model.setdefault("engine_dir", str(tree / "models" / "engines"))
    return parse_config(data)


def test_the_api_may_add_a_model_only_beside_the_models_there_are(tree):
    old = _paths(tree, TWO)
    beside = _paths(tree, {**TWO, "models": TWO["models"] + [{"name": "extra", "path": "models/plates.onnx"}]})
    assert unsafe_changes(old, beside, os.getcwd()) == []
    outside = _paths(tree, {**TWO, "models": TWO["models"] + [{"name": "extra", "path": "secret/evil.onnx"}]})
    assert [p.loc for p in unsafe_changes(old, outside, os.getcwd())] == ["models.2.path"]
    moved = _paths(tree, {**TWO, "models": [TWO["models"][0], {**TWO["models"][1], "path": "secret/evil.onnx"}]})
    assert [p.loc for p in unsafe_changes(old, moved, os.getcwd())] == ["models.1.path"]
    labels = merge_patch(config_to_dict(old), {})
    labels["models"][1]["labels"] = str(tree / "secret" / "labels.txt")
    assert [p.loc for p in unsafe_changes(old, parse_config(labels), os.getcwd())] == ["models.1.labels"]


BROKER_REFUSED = [
    ("a model's path", {"path": "models/other.onnx"}, "models.1.path"),
    ("a model's labels file", {"labels": "models/labels.txt"}, "models.1.labels"),
    ("a model's engine folder", {"engine_dir": "/tmp/engines"}, "models.1.engine_dir"),
    ("a model's calibration folder", {"calibration_dir": "/tmp/calib"}, "models.1.calibration_dir"),
    ("a model's name", {"name": "renamed"}, "models.1.name"),
    ("a model's backend", {"backend": "onnxruntime"}, "models.1.backend"),
]


@pytest.mark.parametrize("case, change, loc", BROKER_REFUSED, ids=[c[0] for c in BROKER_REFUSED])
def test_the_broker_may_not_change_paths_or_names_of_models(case, change, loc):
    current = parse_config(TWO)
    data = merge_patch(TWO, {})
    data["models"][1].update(change)
    if "name" in change:
        data["cameras"][0]["model"] = change["name"]
    assert loc in [p.loc for p in broker_problems(current, parse_config(data))]


def test_the_broker_may_add_no_model_but_may_tune_one_and_move_cameras():
    current = parse_config(TWO)
    added = merge_patch(TWO, {"models": TWO["models"] + [{"name": "x", "path": "models/x.onnx"}]})
    assert "models.2.path" in [p.loc for p in broker_problems(current, parse_config(added))]
    tuned = merge_patch(TWO, {})
    tuned["models"][1].update(conf_threshold=0.3, classes=["car"])
    tuned["cameras"][1]["model"] = "plates"
    assert broker_problems(current, parse_config(tuned)) == []


def test_the_two_models_example_is_valid():
    from pathlib import Path

    from edge_app.config.file import load_config

    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "two-models.yaml")
    assert list(config.model_configs()) == ["default", "gate"]
    assert {cam.id: cam.model for cam in config.cameras} == {"yard": "default", "street": "default", "gate": "gate"}


def _checked(tmp_path, general, second_section):
    from edge_app.config_change.checks import check_runtime

    config = parse_config({"cameras": [], "model": {"path": str(general)}, "models": [second_section]})
    return {p.loc: p.msg for p in check_runtime(config)}


@pytest.mark.parametrize("labels, classes, loc, words", [
    ("car\nbad/label\n", [], "models.0.labels", "may not contain #, +, /"),
    ("car\nplate\n", ["person"], "models.0.classes", "person"),
    (None, ["no-such-class"], "models.0.classes", "no-such-class"),
], ids=["a label breaking the label rule", "a class the labels file lacks", "a class the model lacks"])
def test_the_machine_checks_apply_to_each_model_where_it_is(tmp_path, model_path, int8_model_path, labels, classes,
                                                            loc, words):
    section = {"name": "second", "path": str(int8_model_path), "classes": classes}
    if labels is not None:
        (tmp_path / "labels.txt").write_text(labels)
        section["labels"] = str(tmp_path / "labels.txt")
    found = _checked(tmp_path, model_path, section)
    assert loc in found and words in found[loc], found
    assert not any(key.startswith("model.") for key in found), "the other model is fine"


def test_a_missing_second_model_file_is_named_and_the_first_is_fine(tmp_path, model_path):
    found = _checked(tmp_path, model_path, {"name": "second", "path": str(tmp_path / "gone.onnx")})
    assert list(found) == ["models.0.path"] and "does not exist" in found["models.0.path"]


def test_labels_differ_per_model(tmp_path, model_path):
    """A model with its own labels file: its classes are checked against those, not the other model's."""
    (tmp_path / "plates.txt").write_text("\n".join(["plate"] + [f"other{i}" for i in range(79)]) + "\n")
    assert _checked(tmp_path, model_path, {"name": "plates", "path": str(model_path),
                                           "labels": str(tmp_path / "plates.txt"), "classes": ["plate"]}) == {}
