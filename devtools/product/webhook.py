"""``python -m webhook`` as a local process over TLS, with a throwaway CA (``devtools.local_pki``).

``WebhookProcess.stop()`` ends exactly this process. Used by the webhook's integration tests and their
cluster-wide registration, and by bench.chaos (restarted under load) and bench.webhook.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import socket
import ssl
import subprocess
import sys
import time

import httpx
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from devtools import procs
from devtools.local_pki import ServingPki, make_serving_pki

REPO = pathlib.Path(__file__).resolve().parents[2]


class WebhookProcess:
    """One ``python -m webhook`` process; ``stop()`` ends exactly this process."""

    def __init__(
        self,
        pki: ServingPki,
        *,
        port: int | None = None,
        reload_check_seconds: float = 1.0,
        keep_alive_seconds: int = 5,
    ) -> None:
        self.pki = pki
        self.port = port or procs.free_port()
        self.reload_check_seconds = reload_check_seconds
        self.keep_alive_seconds = keep_alive_seconds
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = pki.cert_file.parent / f"webhook-{self.port}.log"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> WebhookProcess:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "webhook",
                "--cert-file",
                str(self.pki.cert_file),
                "--key-file",
                str(self.pki.key_file),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--reload-check-seconds",
                str(self.reload_check_seconds),
                "--keep-alive-seconds",
                str(self.keep_alive_seconds),
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        self._wait_healthy()
        return self

    def _wait_healthy(self, attempts: int = 300) -> None:
        for _ in range(attempts):
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the webhook exited ({self.proc.returncode}): {self.log_path.read_text()[-2000:]}"
                )
            try:
                with self.client() as client:
                    if client.get("/healthz").status_code == 200:
                        return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the webhook did not become healthy: {self.log_path.read_text()[-2000:]}")

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, verify=ssl.create_default_context(cafile=str(self.pki.ca_file)), timeout=5.0
        )

    def metric(self, name: str, **labels: str) -> float:
        """A sample of the webhook's /metrics (one new TLS connection per call); 0 when absent."""
        with self.client() as client:
            text = client.get("/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return float(sample.value)
        return 0.0

    def served_serial(self) -> int:
        """The serial number of the certificate a new TLS handshake gets."""
        context = ssl.create_default_context(cafile=str(self.pki.ca_file))
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None


def new_pki(directory: pathlib.Path) -> ServingPki:
    return make_serving_pki(directory, now=dt.datetime.now(dt.UTC))
