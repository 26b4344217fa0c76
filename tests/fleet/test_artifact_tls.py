"""The appliance's artifact client over HTTPS to a real fleet service: trusted only with the right CA."""
from __future__ import annotations

import pytest

from edge_app.fleet_agent.artifacts.client import FleetClient, FleetUnreachable
from edge_app.fleet_protocol.artifacts_manifest import verify_manifest
from tests.fleet.artifact_helpers import ADMIN_TOKEN, KEYS, TOKENS, sha
from testkit.certs import make_test_certificates

ONNX = b"an onnx file, as the fleet sees it: bytes" * 100


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_test_certificates(tmp_path_factory.mktemp("fleet-certs"))


def test_manifest_and_blob_over_https_with_the_private_ca(fleet_factory, tmp_path, certs):
    import requests

    fleet = fleet_factory(api={"token": ADMIN_TOKEN, "tls": {"enabled": True, "certfile": str(certs.server_cert),
                                                             "keyfile": str(certs.server_key)}},
                          device_tokens=TOKENS, desired_keys=KEYS,
                          artifacts={"dir": str(tmp_path / "artifacts"), "max_mb": 64, "max_upload_mb": 4})
    assert fleet.url.startswith("https://")
    response = requests.put(f"{fleet.url}/api/v1/models/gate/1", data=ONNX, verify=str(certs.ca), timeout=10,
                            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 201, response.text
    client = FleetClient(fleet.url, TOKENS["edge-b"], "edge-b", ca_certs=str(certs.ca))
    manifest = verify_manifest(client.manifest("gate", "1"), desired_key=KEYS["edge-b"], device_id="edge-b",
                               name="gate", version="1")
    dest = client.download(manifest.file("onnx").sha256, manifest.file("onnx").bytes, tmp_path / "model.onnx")
    assert dest.read_bytes() == ONNX and manifest.file("onnx").sha256 == sha(ONNX)
    # the system's CAs do not know the fleet's private CA: no connection, no token sent in the clear
    with pytest.raises(FleetUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        FleetClient(fleet.url, TOKENS["edge-b"], "edge-b").manifest("gate", "1")
