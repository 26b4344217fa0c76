"""check-config warns when the links of notifications would be refused: ``notifications.base_url``
names a host that ``api.allowed_hosts`` does not list, so the API answers every link with 400."""
import subprocess
import sys

import pytest

TOKEN = "a-token-long-enough-for-the-lan-1234"


@pytest.mark.parametrize("base_url, allowed_hosts, warned", [
    ("https://camera-box.lan:8080", [], True),
    ("https://camera-box.lan:8080", ["camera-box.lan"], False),
    ("https://camera-box.lan", ["*.lan"], False),
    ("http://192.168.1.20:8080", [], False),   # an address cannot be rebound: always answered
    ("http://localhost:8080", [], False),
    (None, [], False),
])
def test_a_base_url_the_api_would_refuse_is_named(tmp_path, model_path, base_url, allowed_hosts, warned):
    notifications = ("" if base_url is None else
                     f"notifications:\n  base_url: {base_url}\n  targets:\n"
                     "    - {name: phone, type: ntfy, url: 'https://ntfy.sh/edge-test'}\n")
    path = tmp_path / "config.yaml"
    path.write_text(f"cameras:\n  - id: a\n    source: test://bars\nmodel:\n  path: {model_path}\n"
                    f"api:\n  host: 0.0.0.0\n  token: {TOKEN}\n  allowed_hosts: {allowed_hosts}\n" + notifications)
    result = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = ("WARN notifications.base_url: the API does not answer to the host name 'camera-box.lan' "
                "(api.allowed_hosts does not list it): every link in a notification would be refused; "
                "add it to api.allowed_hosts")
    assert (expected in result.stdout) == warned, result.stdout
