"""check-config says where a relative path leads: relative paths start in the working directory of
the command, which is not where the configuration file is (the demo's runs in its state folder)."""
import subprocess
import sys


def _check_config(path, cwd):
    return subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_a_missing_relative_file_is_named_with_the_working_directory_and_the_resolved_path(tmp_path):
    elsewhere = tmp_path / "checkout"
    elsewhere.mkdir()
    path = tmp_path / "state" / "config.yaml"
    path.parent.mkdir()
    path.write_text("cameras:\n  - id: demo\n    source: demo.mp4\nmodel:\n  path: engines/m.onnx\n")
    result = _check_config(path, cwd=elsewhere)
    assert result.returncode == 2, result.stderr
    assert (f"model.path: model file engines/m.onnx does not exist (relative to the working directory {elsewhere}: "
            f"{elsewhere}/engines/m.onnx)") in result.stderr
    assert (f"cameras.0.source: file ./demo.mp4 does not exist (relative to the working directory {elsewhere}: "
            f"{elsewhere}/demo.mp4)") in result.stderr


def test_a_valid_configuration_lists_where_its_relative_paths_lead(tmp_path, model_path, bus_clip):
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "m.onnx").symlink_to(model_path)
    (tmp_path / "clip.mp4").symlink_to(bus_clip)
    path = tmp_path / "config.yaml"
    path.write_text(f"cameras:\n  - id: a\n    source: clip.mp4\n  - id: b\n    source: {bus_clip}\n"
                    "model:\n  path: engines/m.onnx\nevents:\n  dir: ev\n")
    result = _check_config(path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (note,) = [line for line in result.stdout.splitlines() if line.startswith("relative paths start")]
    assert note.startswith(f"relative paths start in the working directory {tmp_path}: ")
    for loc, resolved in [("model.path", "engines/m.onnx"), ("cameras.0.source", "clip.mp4"), ("events.dir", "ev"),
                          ("record.dir", "recordings")]:
        assert f"{loc} {tmp_path}/{resolved}" in note
    assert "cameras.1.source" not in note  # an absolute path leads where it says

