"""Signatures of desired configurations: what they bind together and what they refuse."""
import json

import pytest

from edge_app.fleet_protocol.desired_signature import keyed_digest, sign_desired, signature_valid, signed_desired

KEY = "k" * 40
EPOCH = "0123456789abcdef" * 2
ISSUED_MS = 1_765_000_000_000
PATCH = {"cameras": [{"id": "cam1", "detect": False}], "detect": {"conf_threshold": 0.4}}


def test_a_signature_checks_out_for_what_was_signed():
    sig = sign_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH)
    assert sig.startswith("hmac-sha256:") and len(sig) == len("hmac-sha256:") + 64
    assert signature_valid(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH, sig)
    message = signed_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH)
    assert message == {"version": 7, "patch": PATCH, "epoch": EPOCH, "issued_at_ms": ISSUED_MS, "sig": sig}


def test_the_signed_bytes_are_version_2_of_the_format():
    canonical = json.dumps(PATCH, sort_keys=True, separators=(",", ":")).encode()
    expected = keyed_digest(KEY, f"edge-app desired v2\ndev1\n{EPOCH}\n{ISSUED_MS}\n7\n".encode() + canonical)
    assert sign_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH) == "hmac-sha256:" + expected
    version_1 = "hmac-sha256:" + keyed_digest(KEY, b"edge-app desired v1\ndev1\n7\n" + canonical)
    assert not signature_valid(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH, version_1)


def test_key_order_of_the_patch_does_not_matter():
    reordered = {"detect": {"conf_threshold": 0.4}, "cameras": [{"detect": False, "id": "cam1"}]}
    assert signature_valid(KEY, "dev1", EPOCH, ISSUED_MS, 7, reordered,
                           sign_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH))


@pytest.mark.parametrize("key, device, epoch, issued_ms, version, patch", [
    ("x" * 40, "dev1", EPOCH, ISSUED_MS, 7, PATCH),                       # another key
    (KEY, "dev2", EPOCH, ISSUED_MS, 7, PATCH),                            # replayed to another device
    (KEY, "dev1", "f" * 32, ISSUED_MS, 7, PATCH),                         # replayed into another epoch
    (KEY, "dev1", EPOCH, ISSUED_MS + 1, 7, PATCH),                        # another issue time
    (KEY, "dev1", EPOCH, ISSUED_MS, 8, PATCH),                            # another version
    (KEY, "dev1", EPOCH, ISSUED_MS, 7, {"api": {"token": "attacker"}}),   # another patch
    (KEY, "dev1", None, ISSUED_MS, 7, PATCH),                             # no epoch
    (KEY, "dev1", EPOCH, None, 7, PATCH),                                 # no issue time
    (KEY, "dev1", EPOCH.upper(), ISSUED_MS, 7, PATCH),                    # an epoch not of its form
    (KEY, "dev1", EPOCH, float(ISSUED_MS), 7, PATCH),                     # an issue time not an integer
])
def test_a_signature_binds_key_device_epoch_time_version_and_patch(key, device, epoch, issued_ms, version, patch):
    assert not signature_valid(key, device, epoch, issued_ms, version, patch,
                               sign_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH))


@pytest.mark.parametrize("sig", [None, 5, "", "hmac-sha256:", "hmac-sha256:" + "0" * 64, "sha1:" + "0" * 64,
                                 "hmac-sha256:" + "0" * 65, ["hmac-sha256:"]])
def test_malformed_or_forged_signatures_are_refused(sig):
    assert not signature_valid(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH, sig)


def test_a_patch_that_is_not_canonical_json_is_refused_not_raised():
    sig = sign_desired(KEY, "dev1", EPOCH, ISSUED_MS, 7, PATCH)
    assert not signature_valid(KEY, "dev1", EPOCH, ISSUED_MS, 7, {"x": float("nan")}, sig)
