"""Patches addressing one model by name (``models`` as an object), and what the broker may change of ``models[]``.

docs/configuration.md, "Several models"; docs/fleet.md, "Models and engines over the air".
"""
import pytest

from edge_app.config.file import ConfigError, config_to_dict, merge_patch, parse_config
from edge_app.config.model_patch import resolve_model_addresses
from edge_app.config.remote_policy import broker_problems

BASE = {
    "device_id": "dev1",
    "cameras": [{"id": "yard", "source": "test://bars", "model": "general"},
                {"id": "gate", "source": "test://bars", "model": "plates"}],
    "models": [{"name": "general", "path": "models/general.onnx"},
               {"name": "plates", "path": "models/plates.onnx", "artifact": {"name": "gate", "version": "3"}}],
    "fleet": {"remote_config": True, "desired_key": "k" * 40, "url": "https://fleet.example:8443",
              "token": "device-token-0123456789abcdef"},
}
SINGLE = {"device_id": "dev1", "model": {"path": "models/m.onnx", "artifact": {"name": "gate", "version": "3"}},
          "fleet": BASE["fleet"]}


def patched(base: dict, patch: dict):
    data = config_to_dict(parse_config(base))
    return parse_config(merge_patch(data, resolve_model_addresses(data, patch)))


def test_the_fleet_address_reaches_the_entry_running_the_fleet_model():
    new = patched(BASE, {"models": {"artifact:gate": {"artifact": {"version": "4"}}}})
    assert new.models[1].artifact.version == "4" and new.models[1].path == "models/plates.onnx"
    assert new.models[0] == parse_config(BASE).models[0]
    assert broker_problems(parse_config(BASE), new) == []


def test_the_fleet_address_reaches_the_single_model():
    new = patched(SINGLE, {"models": {"artifact:gate": {"artifact": {"version": "4"}}}})
    assert new.model.artifact.version == "4" and new.models == []
    assert broker_problems(parse_config(SINGLE), new) == []
    by_name = patched(SINGLE, {"models": {"default": {"conf_threshold": 0.5}}})
    assert by_name.model.conf_threshold == 0.5 and by_name.model.artifact.version == "3"


def test_a_model_name_addresses_its_entry_and_other_keys_merge_as_ever():
    new = patched(BASE, {"models": {"general": {"conf_threshold": 0.6}}, "tracking": {"enabled": False}})
    assert new.models[0].conf_threshold == 0.6 and new.models[1] == parse_config(BASE).models[1]
    assert new.tracking.enabled is False


@pytest.mark.parametrize("patch, loc, words", [
    ({"models": {"artifact:other": {"artifact": {"version": "4"}}}}, "models.artifact:other", "fleet model 'other'"),
    ({"models": {"nobody": {"conf_threshold": 0.5}}}, "models.nobody", "no model named"),
    ({"models": {"plates": None}}, "models.plates", "whole models list"),
    ({"models": {"plates": "x"}}, "models.plates", "must be an object"),
])
def test_addresses_that_cannot_be_used_are_refused_by_location(patch, loc, words):
    data = config_to_dict(parse_config(BASE))
    with pytest.raises(ConfigError) as err:
        resolve_model_addresses(data, patch)
    assert [p.loc for p in err.value.problems] == [loc] and words in str(err.value)


def test_a_patch_with_a_models_list_is_left_as_it_is():
    patch = {"models": [{"name": "general", "path": "models/general.onnx"}]}
    assert resolve_model_addresses(config_to_dict(parse_config(BASE)), patch) is patch


def test_one_fleet_model_is_run_by_one_model_only():
    twice = merge_patch(BASE, {})
    twice["models"][0]["artifact"] = {"name": "gate", "version": "2"}
    with pytest.raises(ConfigError, match="already run by models.0"):
        parse_config(twice)


@pytest.mark.parametrize("patch, loc", [
    ({"models": {"plates": {"artifact": {"name": "other"}}}}, "models.1.artifact.name"),
    ({"models": {"plates": {"path": "/tmp/evil.onnx"}}}, "models.1.path"),
    ({"models": {"plates": {"engine_dir": "/tmp"}}}, "models.1.engine_dir"),
    ({"models": {"plates": {"artifact": None}}}, "models.1.artifact.name"),
    ({"models": {"general": {"artifact": {"name": "other", "version": "1"}}}}, "models.0.artifact.name"),
])
def test_the_broker_may_change_only_the_artifact_version_of_an_entry(patch, loc):
    locs = [p.loc for p in broker_problems(parse_config(BASE), patched(BASE, patch))]
    assert loc in locs and not any(p.endswith("artifact.version") for p in locs)


def test_the_broker_may_change_an_entrys_version_and_thresholds():
    new = patched(BASE, {"models": {"plates": {"artifact": {"version": "9"}, "conf_threshold": 0.4},
                                    "general": {"classes": ["person"]}}})
    assert broker_problems(parse_config(BASE), new) == []


def test_a_long_address_is_cut_in_the_problem():
    with pytest.raises(ConfigError) as err:
        resolve_model_addresses(config_to_dict(parse_config(BASE)), {"models": {"x" * 5000: {}}})
    assert len(str(err.value)) < 300


@pytest.mark.parametrize("version", ["..", ".", "...", "../../etc", "/etc", "1/../..", "1\\..", "v" * 33, "", "1\x00"])
def test_a_fleet_version_that_is_no_folder_name_of_the_engine_cache_is_refused(version):
    # The version becomes <engine_dir>/fleet/<name>/<version>/: whatever a desired message sends,
    # it is refused by the configuration before any file is touched.
    with pytest.raises(ConfigError) as err:
        patched(BASE, {"models": {"artifact:gate": {"artifact": {"version": version}}}})
    assert [p.loc for p in err.value.problems] == ["models.1.artifact.version"]


@pytest.mark.parametrize("address", ["artifact:", "artifact:../gate", "artifact:gate/../gate", "../plates", "plates\x00"])
def test_an_address_is_only_ever_compared_never_resolved(address):
    with pytest.raises(ConfigError, match="no model"):
        resolve_model_addresses(config_to_dict(parse_config(BASE)), {"models": {address: {"conf_threshold": 0.5}}})
