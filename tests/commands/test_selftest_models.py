"""``edge-app selftest`` with several models: each model is loaded and run on the sample images
on its own, its checks named after it, and a broken one fails without hiding the others."""
import hashlib
import json

from edge_app.commands.selftest import selftest_command
from edge_app.config.file import parse_config
from edge_app.fleet_protocol.artifacts_manifest import manifest_signature


def _config(general, second):
    return parse_config({
        "cameras": [{"id": "gate", "source": "test://bars", "model": "second"}],
        "model": {"path": str(general)},
        "models": [{"name": "second", "path": str(second)}],
        "mqtt": {"enabled": False},
    })


def test_every_model_is_checked_by_name(model_path, int8_model_path, images_dir, capsys):
    code = selftest_command(_config(model_path, int8_model_path), images=[images_dir / "bus.jpg"], decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"model default {model_path}" in out and f"model second {int8_model_path}" in out
    assert "PASS  model default: image bus.jpg" in out, out
    assert "PASS  model second: image bus.jpg" in out, out


def test_a_broken_model_fails_its_own_checks_and_the_other_is_still_checked(model_path, tmp_path, images_dir, capsys):
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not a model" * 100)
    code = selftest_command(_config(model_path, corrupt), images=[images_dir / "bus.jpg"], decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  model second: " in out, out
    assert "PASS  model default: image bus.jpg" in out, out


def _header(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"edge-app selftest: model {name} "))


def test_each_model_line_names_its_cameras(model_path, int8_model_path, images_dir, capsys):
    config = parse_config({
        "cameras": [{"id": "gate", "source": "test://bars", "model": "second"}, {"id": "yard", "source": "test://bars"},
                    {"id": "door", "source": "test://bars", "model": "second"}],
        "model": {"path": str(model_path)},
        "models": [{"name": "second", "path": str(int8_model_path)}, {"name": "spare", "path": str(model_path)}],
        "mqtt": {"enabled": False},
    })
    code = selftest_command(config, images=[images_dir / "bus.jpg"], decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 0, out
    assert _header(out, "default").endswith("; cameras yard"), out
    assert _header(out, "second").endswith("; cameras gate, door"), out
    assert _header(out, "spare").endswith("; cameras none"), out


KEY = "desired-key-of-the-selftest-0123456789"


def _stage_signed(engines, model_path, labels=None):
    """Version 3 of the fleet model ``gate`` staged as ``edge-app run`` leaves it: files named by
    role and the manifest the fleet service signed for device ``dev`` with ``KEY``."""
    staged = engines / "fleet" / "gate" / "3"
    staged.mkdir(parents=True)
    (staged / "model.onnx").write_bytes(model_path.read_bytes())
    files = [{"role": "onnx", "sha256": hashlib.sha256(model_path.read_bytes()).hexdigest(),
              "bytes": model_path.stat().st_size}]
    if labels is not None:
        (staged / "labels.txt").write_text(labels)
        files.append({"role": "labels", "sha256": hashlib.sha256(labels.encode()).hexdigest(), "bytes": len(labels)})
    body = {"device_id": "dev", "model": "gate", "version": "3", "issued": 1733350000, "files": files, "engines": []}
    body["signature"] = manifest_signature(KEY, body)
    (staged / "manifest.json").write_text(json.dumps(body))
    return staged


def _fleet_config(model_path, local_path, engines):
    return parse_config({
        "device_id": "dev",
        "cameras": [{"id": "yard", "source": "test://bars", "model": "plates"}],
        "model": {"path": str(model_path), "engine_dir": str(engines), "artifact": {"name": "people", "version": "1"}},
        "models": [{"name": "plates", "path": str(local_path), "engine_dir": str(engines),
                    "artifact": {"name": "gate", "version": "3"}}],
        "fleet": {"desired_key": KEY},
        "mqtt": {"enabled": False},
    })


def test_a_fleet_model_is_checked_from_its_verified_staged_copy(model_path, tmp_path, images_dir, capsys):
    """The fallback path of ``plates`` is a corrupt file: selftest passes only by checking the staged copy."""
    engines = tmp_path / "engines"
    staged = _stage_signed(engines, model_path, labels="\n".join(f"thing{i}" for i in range(80)) + "\n")
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not a model" * 100)
    code = selftest_command(_fleet_config(model_path, corrupt, engines), images=[images_dir / "bus.jpg"],
                            decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "; fleet artifact people version 1, not staged on this device" in _header(out, "default"), out
    assert f"these checks use path {model_path}" in _header(out, "default"), out
    assert "; fleet artifact gate version 3, staged on this device and verified" in _header(out, "plates"), out
    assert f"these checks use its staged copy {staged / 'model.onnx'}" in _header(out, "plates"), out
    assert "PASS  model plates: image bus.jpg" in out, out


def test_a_staged_copy_that_does_not_match_its_manifest_fails(model_path, int8_model_path, tmp_path, images_dir,
                                                              capsys):
    engines = tmp_path / "engines"
    staged = _stage_signed(engines, model_path)
    (staged / "model.onnx").write_bytes(int8_model_path.read_bytes())  # a real model, but not the signed one
    code = selftest_command(_fleet_config(model_path, model_path, engines), images=[images_dir / "bus.jpg"],
                            decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 1, out
    assert "staged on this device but refused (the staged model.onnx does not match" in _header(out, "plates"), out
    assert "FAIL  model plates: fleet artifact: the staged version 3 of gate cannot run" in out, out
    assert "PASS  model default: image bus.jpg" in out, out
