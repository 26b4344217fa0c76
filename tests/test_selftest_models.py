"""``edge-app selftest`` with several models: each model is loaded and run on the sample images
on its own, its checks named after it, and a broken one fails without hiding the others."""
from edge_app.commands.selftest import selftest_command
from edge_app.config.file import parse_config


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


def test_a_fleet_model_line_names_its_artifact_and_what_the_checks_run(model_path, tmp_path, images_dir, capsys):
    engines = tmp_path / "engines"
    staged = engines / "fleet" / "gate" / "3"
    staged.mkdir(parents=True)
    (staged / "manifest.json").write_text("{}")
    config = parse_config({
        "cameras": [{"id": "yard", "source": "test://bars", "model": "plates"}],
        "model": {"path": str(model_path), "engine_dir": str(engines), "artifact": {"name": "people", "version": "1"}},
        "models": [{"name": "plates", "path": str(model_path), "engine_dir": str(engines),
                    "artifact": {"name": "gate", "version": "3"}}],
        "mqtt": {"enabled": False},
    })
    code = selftest_command(config, images=[images_dir / "bus.jpg"], decoder="ffmpeg")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "; fleet artifact people version 1, not staged on this device" in _header(out, "default"), out
    assert "; fleet artifact gate version 3, staged on this device" in _header(out, "plates"), out
    assert f"these checks use path {model_path}" in _header(out, "plates"), out
