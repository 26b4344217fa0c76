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
