"""Throw-away X.509 certificates for TLS tests, made with the ``openssl`` command line."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


@dataclass(frozen=True)
class BrokerCertificates:
    """A throw-away CA with a server certificate (localhost, 127.0.0.1) and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_test_certificates(
    directory: Path, server_names: Sequence[str] = ("IP:127.0.0.1", "DNS:localhost")
) -> BrokerCertificates:
    """Create a CA, a server and a client certificate with the ``openssl`` command line.

    ``server_names`` are the server certificate's subjectAltName entries.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=edge-app test CA")
    (d / "server.ext").write_text(f"subjectAltName={','.join(server_names)}\n")
    for name, subject, ext in (("server", "/CN=localhost", ["-extfile", "server.ext"]), ("client", "/CN=edge-app-client", [])):
        run("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", *ext)
    return BrokerCertificates(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key")
