"""Decoder processes: real child processes and the real pipe protocol, with doubles for the two
seams that need a GPU (``child_process_doubles``: frames in shared memory, not CUDA IPC)."""
from __future__ import annotations

import json
import time

import pytest

from edge_app.capture.video_decode.child_process import DecodeProcessOpener
from edge_app.capture.video_decode.ipc_ring import CudaIpcSlotWriter, CudaIpcSlots, SlotStates
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import parse_source

DOUBLES = "tests.capture.video_decode.child_process_doubles"
CAPTURE = CaptureConfig(open_timeout_s=5, stall_timeout_s=5)


@pytest.fixture
def opener():
    made = DecodeProcessOpener(opener=f"{DOUBLES}:open_json_source", writer=f"{DOUBLES}:SharedMemoryWriter",
                               slots=f"{DOUBLES}:SharedMemorySlots", slot_count=2)
    yield made
    made.close()


def _source(tmp_path, **plan):
    path = tmp_path / "source.json"
    path.write_text(json.dumps({"frames": 10, **plan}))
    return parse_source(str(path))


def _read_all(source, limit=10_000):
    frames = []
    while len(frames) < limit:
        frame = source.read()
        if frame is None:
            return frames
        nv12 = frame.nv12_host()
        frames.append((int(nv12[0, 0]), int(nv12[0, 1])))
    return frames


def test_a_file_arrives_whole_and_in_order(opener, tmp_path):
    """Two slots for twenty frames: the child waits for slots rather than lose frames."""
    source = opener(_source(tmp_path, frames=20), CAPTURE)
    assert not source.live and source.fps == 30.0
    assert _read_all(source) == [(i, 1) for i in range(20)]
    assert source.read() is None
    source.release()


def test_the_end_of_a_file_reopens_in_the_same_process(opener, tmp_path):
    spec = _source(tmp_path, frames=3)
    first = opener(spec, CAPTURE)
    assert _read_all(first) == [(0, 1), (1, 1), (2, 1)]
    process = first._child.process
    first.release()
    assert process.is_alive()
    second = opener(spec, CAPTURE)
    assert second._child.process is process
    assert _read_all(second) == [(0, 2), (1, 2), (2, 2)]  # the process's second pass
    second.release()


def test_a_looping_file_starts_over_with_the_source_it_has(opener, tmp_path):
    """NVDEC's decoder takes about 250 ms to create: a file that loops is rewound, not reopened."""
    spec = _source(tmp_path, frames=3, rewind="ok")
    for expected_pass in (1, 2, 3):
        source = opener(spec, CAPTURE)
        first = source.read().nv12_host()  # the frame itself goes: two slots, and _read_all holds one
        assert first[0, 2] == 1  # opened once, in the first pass
        assert [(int(first[0, 0]), int(first[0, 1])), *_read_all(source)] == [(i, expected_pass) for i in range(3)]
        source.release()


def test_a_stream_that_ended_is_opened_anew_not_rewound(opener, tmp_path):
    """Only a file starts over: a live stream's end is a broken stream, and it is connected again."""
    spec = _source(tmp_path, frames=3, live=True, rewind="ok")
    first = opener(spec, CAPTURE)
    while first.read() is not None:
        pass
    first.release()
    second = opener(spec, CAPTURE)
    assert second.read().nv12_host()[0, 2] == 2  # a second open
    second.release()


@pytest.mark.parametrize("how", ["fails", "no_frame"])
def test_a_file_that_cannot_start_over_is_opened_anew(opener, tmp_path, how):
    spec = _source(tmp_path, frames=3, rewind=how)
    first = opener(spec, CAPTURE)
    assert _read_all(first) == [(i, 1) for i in range(3)]
    first.release()
    second = opener(spec, CAPTURE)
    frame = second.read().nv12_host()
    # "no_frame" began a pass (2) that gave nothing; the new open's pass follows it
    assert frame[0, 2] == 2 and frame[0, 1] == (2 if how == "fails" else 3)
    assert len(_read_all(second)) == 2
    second.release()


def test_releasing_mid_stream_ends_the_process(opener, tmp_path):
    source = opener(_source(tmp_path, frames=1000), CAPTURE)
    source.read()
    process = source._child.process
    source.release()
    process.join(5)
    assert not process.is_alive()


def test_a_live_stream_drops_pictures_when_every_slot_is_taken(opener, tmp_path):
    """The live child keeps reading; with the parent away, pictures beyond the slots are lost
    and counted, and those delivered are still in order."""
    import time

    source = opener(_source(tmp_path, frames=200, live=True, delay_s=0.002), CAPTURE)
    time.sleep(1.0)
    frames = _read_all(source)
    assert source.dropped > 0
    indices = [i for i, _ in frames]
    assert indices == sorted(indices) and len(indices) + source.dropped == 200
    source.release()


@pytest.mark.parametrize("kind, error", [("source", SourceError), ("unavailable", SourceUnavailable)])
def test_open_errors_keep_their_meaning(opener, tmp_path, kind, error):
    with pytest.raises(error, match="never be opened" if kind == "source" else "offline"):
        opener(_source(tmp_path, open_error=kind), CAPTURE)


@pytest.mark.parametrize("plan, good_frames, message", [
    ({"fail_after": 4}, 4, "the stream broke"),  # a read error in the decoder reaches the camera
    ({"crash_after": 3}, 3, "exited"),  # a crashed decoder process is a read failure
])
def test_failures_after_the_first_frames_are_read_failures(opener, tmp_path, plan, good_frames, message):
    source = opener(_source(tmp_path, frames=10, **plan), CAPTURE)
    assert len(_read_all(source, limit=good_frames)) == good_frames
    with pytest.raises(RuntimeError, match=message):
        source.read()
    source.release()


def test_nvdec_processes_off_decodes_in_the_calling_thread(opener, tmp_path):
    """``capture.nvdec_processes: false``: the same opener, no child process."""
    import multiprocessing

    before = set(multiprocessing.active_children())
    source = opener(_source(tmp_path, frames=3), CaptureConfig(nvdec_processes=False))
    assert set(multiprocessing.active_children()) == before
    assert [int(f.nv12[0, 0]) for f in iter(source.read, None)] == [0, 1, 2]
    source.release()


def _pixels(frame):
    nv12 = frame.nv12_host()
    return int(nv12[0, 0]), int(nv12[0, 1])


def test_a_frame_keeps_its_slot_until_the_appliance_drops_it(opener, tmp_path):
    """No copy in the appliance: a frame is its slot. With both slots held the decoder waits
    (the read stalls) and overwrites neither; dropping one frame lets the next picture in."""
    source = opener(_source(tmp_path, frames=5), CaptureConfig(open_timeout_s=5, stall_timeout_s=0.5))
    first, second = source.read(), source.read()
    assert source.read() is None  # stalled: every slot is held
    assert source._child.states.held() == 2
    assert (_pixels(first), _pixels(second)) == ((0, 1), (1, 1))
    del first
    assert _pixels(source.read()) == (2, 1)
    source.release()


def test_frames_stay_readable_after_their_decoder_process_is_gone(opener, tmp_path):
    """The appliance owns the slots' memory, so a frame outlives a stopped decoder process."""
    source = opener(_source(tmp_path, frames=100), CAPTURE)
    frame = source.read()
    process = source._child.process
    source.release()
    opener.close()
    process.join(5)
    assert not process.is_alive()
    assert _pixels(frame) == (0, 1)


def test_every_slot_is_free_again_once_the_frames_are_gone(opener, tmp_path):
    source = opener(_source(tmp_path, frames=7), CAPTURE)
    states = source._child.states
    held = [source.read() for _ in range(2)]
    assert states.held() == 2
    del held
    assert len(_read_all(source)) == 5 and states.held() == 0
    source.release()


@pytest.mark.parametrize("double, real", [("SharedMemorySlots", CudaIpcSlots), ("SharedMemoryWriter", CudaIpcSlotWriter)])
def test_the_doubles_have_the_real_slots_interface(double, real):
    import inspect

    from tests.capture.video_decode import child_process_doubles

    def methods(cls):  # name -> parameter names, inherited ones and the constructor included
        return {name: list(inspect.signature(getattr(cls, name)).parameters) for name in dir(cls)
                if callable(getattr(cls, name)) and (name == "__init__" or not name.startswith("_"))}

    assert methods(getattr(child_process_doubles, double)) == methods(real)


def test_slot_states_hand_out_free_slots_until_every_one_is_held():
    states = SlotStates(3)
    assert [states.take_free() for _ in range(4)] == [0, 1, 2, None]
    states.release(1)
    assert states.held() == 2 and states.take_free() == 1
    with pytest.raises(ValueError):
        SlotStates(0)


def test_stopping_a_camera_ends_the_decoder_process_its_file_left_parked(tmp_path):
    """A file that ended parks its decoder process for a reopen; a camera that stops for good
    must not leave it (with its CUDA context and slots) waiting out PARK_TIMEOUT_S."""
    opener = DecodeProcessOpener(opener=f"{DOUBLES}:open_json_source", writer=f"{DOUBLES}:SharedMemoryWriter",
                                 slots=f"{DOUBLES}:SharedMemorySlots", slot_count=4)  # drain() holds every frame
    from edge_app.capture import CameraWorker, StreamState
    from edge_app.capture.video_decode.decoders import CameraOpener
    from edge_app.config.schema_cameras import CameraConfig
    from tests.capture.helpers import drain, wait_for

    spec = _source(tmp_path, frames=3)
    camera_opener = CameraOpener("nvdec", openers={"nvdec": opener}, checks={})
    worker = CameraWorker(CameraConfig(id="cam1", source=spec.target, decoder="nvdec", realtime=False), CAPTURE,
                          opener=camera_opener)
    worker.start()
    try:
        assert len(drain(worker, until=lambda: worker.state is StreamState.STOPPED, timeout_s=20)) == 3
        assert wait_for(lambda: opener._parked is not None, 5)
        process = opener._parked[1].process
        assert process.is_alive()
    finally:
        worker.stop()
        opener.close()
    process.join(5)
    assert not process.is_alive()


# -- a recorded camera: the child's packets reach the camera's sink, in order with the frames -----
from tests.support.packets import CollectingSink  # noqa: E402


@pytest.mark.parametrize("processes", [True, False])
def test_a_recorded_camera_gets_its_packets_from_the_decoder_process(opener, tmp_path, processes):
    sink = CollectingSink()
    capture = CAPTURE.model_copy(update={"nvdec_processes": processes})
    source = opener(_source(tmp_path, frames=12), capture, packet_sink=sink)
    frames = []
    for _ in range(12):
        frame = source.read()
        frames.append(frame is not None)
        # each frame's packet was handed over before the frame itself
        assert sink.count("packet") >= len(frames)
    assert source.read() is None
    source.release()
    assert all(frames)
    [connection] = sink.connections()
    assert connection.info.codec == "h264" and connection.info.extradata == b"\0\0\0\1sps"
    # a PyAV stream does not cross processes; in the camera's thread it is there
    assert (connection.info.template is None) is processes
    assert [packet.data for packet in connection.packets] == [b"pkt%d" % i for i in range(12)]
    assert connection.keyframes == 3


def test_a_camera_that_is_not_recorded_gets_no_packet_messages(opener, tmp_path):
    source = opener(_source(tmp_path, frames=3), CAPTURE)
    assert _read_all(source) == [(0, 1), (1, 1), (2, 1)]
    source.release()


def test_pictures_off_the_cameras_schedule_are_dropped_in_the_process_and_counted(opener, tmp_path):
    """One picture in three kept (10 of a 30 fps file's): the others never reach a slot or the pipe."""
    source = opener(_source(tmp_path, frames=60), CAPTURE)
    source.pace(0.1)
    frames, skipped = [], 0
    while True:
        frame = source.read()
        if frame is None:
            break
        frames.append(int(frame.nv12_host()[0, 0]))
        skipped += source.take_skipped()
    skipped += source.take_skipped()  # those after the last kept picture come with the end
    assert frames == sorted(frames) and len(frames) + skipped == 60
    assert all(later - earlier == 3 for earlier, later in zip(frames[5:], frames[6:]))  # once the pace arrived
    assert len(frames) <= 25
    source.release()


def test_a_paced_file_that_starts_over_keeps_its_schedule_from_its_first_picture(opener, tmp_path):
    """A rewound file's stream time starts again: the schedule must not wait for the last pass's time."""
    spec = _source(tmp_path, frames=30, rewind="ok")
    for expected_pass in (1, 2):
        source = opener(spec, CAPTURE)
        source.pace(0.1)
        frames = []
        while True:
            frame = source.read()
            if frame is None:
                break
            nv12 = frame.nv12_host()
            frames.append((int(nv12[0, 0]), int(nv12[0, 1])))
        assert len(frames) + source.take_skipped() == 30  # each pass counts its own
        assert frames[-1][0] >= 27 and all(p == expected_pass for _, p in frames)
        assert 8 <= len(frames) <= 14  # about one in three, a few more before the pace arrived
        source.release()


def test_a_file_waiting_for_a_slot_sleeps_until_one_is_given_back(opener, tmp_path):
    """A file's decoder process loses no picture: with every slot held it waits for the appliance.
    It waits on the slots being given back, not by polling (a file played in real time spends
    nearly all its time so): about a thousand wake-ups a second before, a few dozen now."""
    import psutil
    source = opener(_source(tmp_path, frames=20), CAPTURE)
    held = [source.read(), source.read()]
    child = psutil.Process(source._child.process.pid)
    time.sleep(0.3)  # the child has decoded the next picture and waits for a slot
    before, started_s = child.num_ctx_switches().voluntary, time.monotonic()
    time.sleep(1.0)
    wakeups_per_s = (child.num_ctx_switches().voluntary - before) / (time.monotonic() - started_s)
    assert wakeups_per_s < 100
    del held[0]  # a slot given back: the waiting picture comes at once
    assert _pixels(source.read()) == (2, 1)
    source.release()
