"""Whether a process will find NVIDIA's MPS control daemon: what the CUDA driver looks for, in the
directory it looks in (no GPU needed: the daemon's pipe is a file like any other)."""
from __future__ import annotations

import os
import socket

import pytest

from edge_app.cuda.mps import DEFAULT_PIPE_DIRECTORY, mps_status


def _control_fifo(directory):
    directory.mkdir(parents=True, exist_ok=True)
    os.mkfifo(directory / "control")


def _control_socket(directory):
    directory.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(directory / "control"))
    return server


@pytest.mark.parametrize("make", [_control_fifo, _control_socket])
def test_a_control_pipe_in_the_configured_directory_means_running(tmp_path, make):
    held = make(tmp_path / "mps")
    try:
        status = mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "mps")})
    finally:
        if held is not None:
            held.close()
    assert status.running and status.pipe_directory == tmp_path / "mps"
    assert "is running" in status.describe() and str(tmp_path / "mps") in status.describe()


@pytest.mark.parametrize("contents", ["nothing", "another file", "no directory"])
def test_without_the_control_pipe_it_is_not_running_and_says_where_it_looked(tmp_path, contents):
    directory = tmp_path / "mps"
    if contents != "no directory":
        directory.mkdir()
    if contents == "another file":
        (directory / "log").write_text("")
    status = mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(directory)})
    assert not status.running
    assert str(directory) in status.describe() and "systemd/edge-app-mps.service" in status.describe()


def test_a_daemon_in_another_directory_is_not_the_one_cuda_finds(tmp_path):
    """The driver looks only where $CUDA_MPS_PIPE_DIRECTORY says: a daemon elsewhere is unused."""
    _control_fifo(tmp_path / "elsewhere")
    assert not mps_status({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "mps")}).running


@pytest.mark.parametrize("environ", [{}, {"CUDA_MPS_PIPE_DIRECTORY": ""}])
def test_cudas_default_directory_when_none_is_set(environ):
    assert mps_status(environ).pipe_directory == DEFAULT_PIPE_DIRECTORY
