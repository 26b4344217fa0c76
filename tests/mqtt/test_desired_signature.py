"""Signatures of desired configurations: what they bind together and what they refuse."""
import pytest

from edge_app.fleet_agent.desired_signature import sign_desired, signature_valid

KEY = "k" * 40
PATCH = {"cameras": [{"id": "cam1", "detect": False}], "detect": {"conf_threshold": 0.4}}


def test_a_signature_checks_out_for_what_was_signed():
    sig = sign_desired(KEY, "dev1", 7, PATCH)
    assert sig.startswith("hmac-sha256:") and len(sig) == len("hmac-sha256:") + 64
    assert signature_valid(KEY, "dev1", 7, PATCH, sig)


def test_key_order_of_the_patch_does_not_matter():
    reordered = {"detect": {"conf_threshold": 0.4}, "cameras": [{"detect": False, "id": "cam1"}]}
    assert signature_valid(KEY, "dev1", 7, reordered, sign_desired(KEY, "dev1", 7, PATCH))


@pytest.mark.parametrize("key, device, version, patch", [
    ("x" * 40, "dev1", 7, PATCH),                       # another key
    (KEY, "dev2", 7, PATCH),                            # replayed to another device
    (KEY, "dev1", 8, PATCH),                            # another version
    (KEY, "dev1", 7, {"api": {"token": "attacker"}}),   # another patch
])
def test_a_signature_binds_key_device_version_and_patch(key, device, version, patch):
    assert not signature_valid(key, device, version, patch, sign_desired(KEY, "dev1", 7, PATCH))


@pytest.mark.parametrize("sig", [None, 5, "", "hmac-sha256:", "hmac-sha256:" + "0" * 64, "sha1:" + "0" * 64,
                                 "hmac-sha256:" + "0" * 65, ["hmac-sha256:"]])
def test_malformed_or_forged_signatures_are_refused(sig):
    assert not signature_valid(KEY, "dev1", 7, PATCH, sig)


def test_a_patch_that_is_not_canonical_json_is_refused_not_raised():
    sig = sign_desired(KEY, "dev1", 7, PATCH)
    assert not signature_valid(KEY, "dev1", 7, {"x": float("nan")}, sig)
