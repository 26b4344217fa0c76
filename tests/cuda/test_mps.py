"""Whether a process will find NVIDIA's MPS control daemon: a daemon listening on the control
socket, in the directory the CUDA driver looks in. No GPU needed: the daemon's socket is a plain
UNIX SOCK_SEQPACKET socket (seen on an H200 test machine, where it also stays behind after
``quit`` and then refuses connections)."""
from __future__ import annotations

import os
import socket

import pytest

from edge_app.cuda.mps import DEFAULT_PIPE_DIRECTORY, mps_status


def _listening(directory):
    directory.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(str(directory / "control"))
    server.listen(1)
    return server


def test_a_daemon_listening_in_the_configured_directory_is_running(tmp_path):
    server = _listening(tmp_path / "mps")
    try:
        status = mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "mps")})
    finally:
        server.close()
    assert status.running and status.pipe_directory == tmp_path / "mps"
    assert "is running" in status.describe() and str(tmp_path / "mps") in status.describe()


def _left_behind(directory):
    _listening(directory).close()  # the socket file stays, as after the daemon's "quit"


def _stream_socket(directory):  # listening, but not the kind of socket the daemon has
    directory.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(directory / "control"))
    server.listen(1)
    _KEEP.append(server)


_KEEP: list = []


@pytest.fixture(autouse=True)
def _close_kept():
    yield
    while _KEEP:
        _KEEP.pop().close()


def _fifo(directory):
    directory.mkdir()
    os.mkfifo(directory / "control")


def _other_files(directory):
    directory.mkdir()
    (directory / "log").write_text("")


@pytest.mark.parametrize("make", [_left_behind, _stream_socket, _fifo, _other_files, lambda directory: None],
                         ids=["socket left behind", "stream socket", "not a socket", "other files", "no directory"])
def test_without_a_listening_daemon_it_is_not_running_and_says_where_it_looked(tmp_path, make):
    directory = tmp_path / "mps"
    make(directory)
    status = mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(directory)})
    assert not status.running
    assert str(directory) in status.describe() and "systemd/edge-app-mps.service" in status.describe()


def test_a_daemon_in_another_directory_is_not_the_one_cuda_finds(tmp_path):
    """The driver looks only where $CUDA_MPS_PIPE_DIRECTORY says: a daemon elsewhere is unused."""
    server = _listening(tmp_path / "elsewhere")
    try:
        assert not mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "mps")}).running
    finally:
        server.close()


@pytest.mark.parametrize("environ", [{}, {"CUDA_MPS_PIPE_DIRECTORY": ""}])
def test_cudas_default_directory_when_none_is_set(environ):
    assert mps_status(environ).pipe_directory == DEFAULT_PIPE_DIRECTORY
