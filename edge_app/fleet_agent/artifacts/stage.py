"""Staging a fleet model version: its verified manifest and files under ``<engine_dir>/fleet/<name>/<version>/``.

The folder's name comes from the configuration (``model.artifact``, checked by the schema) and
is checked again to lie inside the engine cache; the files in it are named by their role
(``model.onnx``, ``labels.txt``), never by anything the fleet service sends. The verified
manifest is written last (``manifest.json``): an appliance that restarts while the fleet
service is away uses a staged version again, after checking the signature and every file's
SHA-256 once more.
"""
from __future__ import annotations

import logging
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple

from edge_app.config import staged_model
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.detect.tensorrt.onnx_info import file_sha256
from edge_app.fleet_agent.artifacts.client import FleetClient, FleetRefused, FleetUnreachable
from edge_app.fleet_protocol.artifacts_manifest import ROLE_FILES, Manifest, ManifestError, verify_manifest
from edge_app.fleet_agent.artifacts.state import ModelsState
from edge_app.process.atomic_file import write_atomic

log = logging.getLogger(__name__)

MANIFEST_FILE = staged_model.MANIFEST_FILE
#: staged versions of one fleet model kept on the device: the running one and the ones before it,
#: for a rollback without a download; older ones (files and engines) go once a new one is staged
KEEP_VERSIONS = 3
#: the name a fetched engine is downloaded to before the engine cache takes it
ENGINE_FILE = "fleet.engine"


@dataclass(frozen=True)
class StagedModel:
    dir: Path
    onnx: Path
    labels: Optional[Path]
    manifest: Manifest


def stage_dir(engine_dir: str, name: str, version: str) -> Path:
    try:
        return staged_model.stage_dir(engine_dir, name, version)
    except ValueError as err:
        raise ManifestError(str(err)) from None


def make_client(config: AppConfig) -> FleetClient:
    fleet = config.fleet
    if not fleet.url or not fleet.token:
        raise FleetRefused("model.artifact needs fleet.url and fleet.token (and fleet.desired_key to verify manifests)")
    return FleetClient(fleet.url, fleet.token, config.device_id, fleet.ca_certs)


class Stager:
    """Fetches, verifies and stages one model version; reports ``downloading`` on ``state``."""

    def __init__(self, config: Callable[[], AppConfig], state: ModelsState,
                 client_factory: Callable[[AppConfig], FleetClient] = make_client) -> None:
        self._config = config
        self._state = state
        self._client_factory = client_factory

    def client(self) -> FleetClient:
        return self._client_factory(self._config())

    def stage(self, model: ModelConfig, cancel: threading.Event) -> Tuple[StagedModel, FleetClient]:
        """The staged version of ``model.artifact``; FleetUnreachable (try later), FleetRefused or ManifestError."""
        artifact = model.artifact
        assert artifact is not None
        config = self._config()
        folder = stage_dir(model.engine_dir, artifact.name, artifact.version)
        client = self.client()

        verify = _verifier(config, model)
        self._state.set(artifact.name, artifact.version, "downloading", 0.0)
        try:
            body = client.manifest(artifact.name, artifact.version)
        except FleetUnreachable as err:
            staged = _staged_before(folder, verify)
            if staged is None:
                raise
            log.warning("%s; using model %s version %s as staged before", err, artifact.name, artifact.version)
            return staged, client
        manifest = verify(body)
        total = sum(f.bytes for f in manifest.files) or 1
        done = 0
        for entry in manifest.files:
            dest = folder / ROLE_FILES[entry.role]
            if not (dest.is_file() and dest.stat().st_size == entry.bytes and file_sha256(dest) == entry.sha256):
                base = done
                client.download(entry.sha256, entry.bytes, dest, cancel=cancel,
                                progress=lambda n: self._state.set(artifact.name, artifact.version, "downloading",
                                                                   (base + n) / total))
            done += entry.bytes
        write_atomic(folder / MANIFEST_FILE, body, make_folder=True)
        configured = [m.artifact.version for m in config.model_configs().values()
                      if m.artifact is not None and m.artifact.name == artifact.name]
        prune_staged(folder.parent, keep=[artifact.version, *configured])
        self._state.set(artifact.name, artifact.version, "downloading", 1.0)
        # every file was hashed just now, as it was found or as it was downloaded: not read a second time
        return _staged(folder, manifest), client

def _verifier(config: AppConfig, model: ModelConfig) -> Callable[[bytes], Manifest]:
    artifact = model.artifact

    def verify(body: bytes) -> Manifest:
        return verify_manifest(body, desired_key=config.fleet.desired_key, device_id=config.device_id,
                               name=artifact.name, version=artifact.version)
    return verify


def _staged_before(folder: Path, verify: Callable[[bytes], Manifest]) -> Optional[StagedModel]:
    try:
        body = (folder / MANIFEST_FILE).read_bytes()
    except OSError:
        return None
    return _checked(folder, verify(body))


def _checked(folder: Path, manifest: Manifest) -> StagedModel:
    """Every file's SHA-256 compared with the manifest, right before it is used."""
    for entry in manifest.files:
        path = folder / ROLE_FILES[entry.role]
        try:
            matches = path.stat().st_size == entry.bytes and file_sha256(path) == entry.sha256
        except OSError:
            matches = False
        if not matches:
            path.unlink(missing_ok=True)
            (folder / MANIFEST_FILE).unlink(missing_ok=True)
            raise FleetRefused(f"the staged {ROLE_FILES[entry.role]} does not match the manifest's SHA-256")
    return _staged(folder, manifest)


def verified_staged(config: AppConfig, model: ModelConfig) -> Optional[StagedModel]:
    """The version of ``model.artifact`` staged on this device, with its manifest's signature and
    every file's SHA-256 checked as ``edge-app run`` checks them before use, fetching nothing; None
    when it is not staged here. ManifestError or FleetRefused when it does not verify (a file that
    does not match is removed, as by a run)."""
    artifact = model.artifact
    if artifact is None:
        return None
    return _staged_before(stage_dir(model.engine_dir, artifact.name, artifact.version), _verifier(config, model))


def prune_staged(model_dir: Path, keep: Iterable[str], most: int = KEEP_VERSIONS) -> List[str]:
    """Remove the staged versions of one fleet model beyond the ``most`` staged last (by their
    manifest's time), never one named in ``keep``; returns the versions removed. Without it
    every rollout would leave its files and engines on the device for good."""
    kept = set(keep)
    staged = []
    for folder in model_dir.iterdir() if model_dir.is_dir() else ():
        if folder.is_dir() and not folder.is_symlink():
            try:
                staged.append((folder.joinpath(MANIFEST_FILE).stat().st_mtime, folder))
            except OSError:  # never finished staging: as old as can be
                staged.append((0.0, folder))
    staged.sort(reverse=True)
    removed = []
    for index, (_, folder) in enumerate(staged):
        if index < most or folder.name in kept:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        log.info("staged fleet model %s version %s removed (%d newer versions are kept)",
                 model_dir.name, folder.name, most)
        removed.append(folder.name)
    return removed


def _staged(folder: Path, manifest: Manifest) -> StagedModel:
    labels = folder / ROLE_FILES["labels"] if manifest.file("labels") is not None else None
    return StagedModel(folder, folder / ROLE_FILES["onnx"], labels, manifest)


__all__ = ["ENGINE_FILE", "KEEP_VERSIONS", "MANIFEST_FILE", "StagedModel", "Stager", "make_client", "prune_staged",
           "stage_dir", "verified_staged"]
