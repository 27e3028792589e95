"""A tiny-llama-chat order with a token, planned and rendered by the real controller code, its
Deployment's pod run by the pod runner (devtools/podrunner) on this machine: the fetcher downloads from
the loopback Hub mirror with the ``hf`` CLI the pinned image ships, the token guard writes its module,
and the real vLLM (CPU build) serves with the order's TLS certificate, ``--enable-ssl-refresh`` as
rendered.

- **Facts**: ``model_facts`` of the mirror's repository (its info, config and safetensors header), as
  a resolution derives them; the files the fetcher selects are ``facts.files``.
- **Plan**: the real planner on ``testkit.planner.small_fleet()`` with the bundled recipe's pinned
  image; **render**: ``render.deployment`` with the fetch spec, Settings pointing at the mirror.
- **Secrets**: ``<order>-tls`` minted by a test CA for the probe host (``exposure.probe_url``:
  ``<order>.<ns>.svc``) with ``ca.crt``, ``<order>-auth`` with a random token.

``ServedPod.address`` is what ``probeAddressOverride`` would name; ``client()`` reaches it with the
endpoint host as SNI and ``Host``, trusting the test CA, as the probe does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml
from cryptography import x509

from controller import render
from controller.config.settings import Settings
from controller.live.probe import Prober, ProbeResult
from controller.model_facts import TensorMeta, model_facts
from controller.model_facts.facts import ModelFacts
from controller.planner import plan_order
from controller.render.exposure import probe_url
from devtools import tiny_models
from devtools.pki import cert_pem, key_pem, new_ca, new_leaf
from devtools.podrunner import PodObjects, PodRunner, images
from devtools.podrunner.launch import listen_port
from devtools.tiny_models import CHAT
from shared import names
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe
from standins.hub_mirror import RunningMirror, start_mirror
from standins.hub_mirror.repos import Repo
from standins.hub_mirror.tiny import tiny_repos
from testkit.planner import inventory_of, make_class, make_request, small_fleet

ROOT = Path(__file__).resolve().parents[2]
ORDER, NAMESPACE = "tiny-chat", "team"
SERVED = CHAT.repo_id
START_TIMEOUT = 600.0


def tiny_repo() -> Repo:
    """The mirror's tiny-llama-chat, built into the cache first on a cold machine (transformers lives
    in the vLLM environment, not the project's)."""
    tiny_models.ensure_built()
    return tiny_repos()[CHAT.repo_id]


def safetensors_header(data: bytes) -> list[TensorMeta]:
    (length,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + length])
    return [
        TensorMeta(name, str(e["dtype"]), tuple(int(d) for d in e["shape"]))
        for name, e in header.items()
        if name != "__metadata__"
    ]


def tiny_facts(repo: Repo) -> ModelFacts:
    """The facts a resolution derives from the mirror's repository."""
    return model_facts(
        repo_id=repo.repo_id,
        commit=repo.sha,
        info=repo.info(blobs=True),
        config=repo.facts["config"],
        tensors=safetensors_header(repo.files["model.safetensors"].head),
    )


def the_order() -> InferenceService:
    return InferenceService.model_validate(
        {
            "apiVersion": "ai.deckhouse.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": ORDER, "namespace": NAMESPACE, "uid": "u-1", "generation": 1},
            "spec": {
                "inferenceServiceClassName": "default-llm",
                "model": {"src": "HuggingFace", "ref": {"name": SERVED}},
            },
        }
    )


def rendered_pod(facts: ModelFacts, hf_endpoint: str) -> dict[str, Any]:
    """The pod of the order's Deployment, as the controller plans and renders it."""
    recipe = InferenceRecipe.model_validate(
        yaml.safe_load((ROOT / "deploy/base/platform/vllm.yaml").read_text())
    )
    klass = make_class()
    assert render.requires_token(klass)
    outcome = plan_order(make_request(inventory_of(small_fleet()), facts, recipes=[recipe], class_spec=klass))
    assert outcome.plan is not None, outcome.message
    settings = Settings(hf_endpoint=hf_endpoint, model_storage_class="models")
    dep = render.deployment(
        the_order(),
        outcome.plan,
        klass,
        settings,
        revision=facts.revision,
        fetch=render.fetch_spec(facts, facts.revision),
    )
    pod: dict[str, Any] = dep["spec"]["template"]["spec"]
    return pod


@dataclass(frozen=True)
class TestCa:
    """The CA that issues ``<order>-tls`` (cert-manager's job), and its file (what ``platformCAFile`` names)."""

    cert: x509.Certificate
    key: Any
    file: Path

    @classmethod
    def new(cls, into: Path) -> TestCa:
        ca, key = new_ca("podrunner-test-ca", now=dt.datetime.now(dt.UTC), days=1)
        (into / "ca.crt").write_bytes(cert_pem(ca))
        return cls(ca, key, into / "ca.crt")

    def tls_secret(self, host: str) -> tuple[dict[str, str], int]:
        """A ``kubernetes.io/tls`` Secret's data for ``host``, and the certificate's serial number."""
        now = dt.datetime.now(dt.UTC)
        cert, key = new_leaf(
            self.cert, self.key, common_name=host, hosts=[host], server=True, now=now, days=1
        )
        data = {
            "tls.crt": cert_pem(cert).decode(),
            "tls.key": key_pem(key).decode(),
            "ca.crt": cert_pem(self.cert).decode(),
        }
        return data, int(cert.serial_number)


class SniClient(httpx.Client):
    """An httpx client that connects to one address and sends ``sni`` as SNI (``Host`` by default)."""

    def __init__(self, sni: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._sni = sni

    def build_request(self, *args: Any, **kwargs: Any) -> httpx.Request:
        request = super().build_request(*args, **kwargs)
        request.extensions["sni_hostname"] = self._sni
        return request


@dataclass
class ServedPod:
    runner: PodRunner
    pod: dict[str, Any]
    facts: ModelFacts
    mirror: RunningMirror
    token: str
    ca: TestCa
    model_dir: Path
    url: str  # the endpoint the probe names: https://<order>.<ns>.svc
    address: str  # 127.0.0.1:<port>: what probeAddressOverride names
    started_seconds: float = 0.0
    probe: ProbeResult | None = None

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    def prober(self) -> Prober:
        return Prober(ca_file=str(self.ca.file), address_override=self.address, timeout=10)

    def served_serial(self) -> int:
        """The serial number of the certificate the endpoint presents for its host (by SNI)."""
        ctx = ssl.create_default_context(cafile=str(self.ca.file))
        host, port = self.address.rsplit(":", 1)
        with (
            socket.create_connection((host, int(port)), timeout=10) as raw,
            ctx.wrap_socket(raw, server_hostname=self.host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return int(x509.load_der_x509_certificate(der).serial_number)

    def client(self, timeout: float = 60) -> SniClient:
        ctx = ssl.create_default_context(cafile=str(self.ca.file))
        return SniClient(
            self.host,
            base_url=f"https://{self.address}",
            headers={"Host": self.host},
            verify=ctx,
            trust_env=False,
            timeout=timeout,
        )


def wait_healthy(served: ServedPod, deadline: float) -> ProbeResult:
    """The controller's probe, until it is healthy; fails when the runtime dies or time runs out."""
    prober = served.prober()
    result = ProbeResult(False, "not probed")
    try:
        while time.monotonic() < deadline:
            status = served.runner.statuses()["runtime"]
            if not status.running:
                raise RuntimeError(
                    f"vLLM exited with {status.exit_code}:\n{served.runner.log_tail('runtime')}"
                )
            result = prober.probe(served.url, served.token)
            if result.ok:
                return result
            time.sleep(2)
    finally:
        prober.close()
    raise TimeoutError(f"the probe never passed ({result.detail}):\n{served.runner.log_tail('runtime')}")


@contextlib.contextmanager
def serve(workdir: Path) -> Iterator[ServedPod]:
    """The order's pod, running and probed healthy; stopped on the way out."""
    order = the_order()
    repo = tiny_repo()
    facts = tiny_facts(repo)
    token = secrets.token_urlsafe(32)
    with start_mirror(tiny=True) as mirror:
        pod = rendered_pod(facts, mirror.url)
        url = probe_url(order)
        ca = TestCa.new(workdir)
        tls, _ = ca.tls_secret(urlsplit(url).hostname or "")
        objects = PodObjects(
            name=f"{names.workload(ORDER)}-0",
            namespace=NAMESPACE,
            secrets={names.tls_secret(ORDER): tls, names.auth_secret(ORDER): {names.AUTH_TOKEN_KEY: token}},
        )
        model_claim = next(
            v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if v["name"] == "model"
        )
        model_dir = workdir / "model-volume"
        runner = PodRunner(
            pod, objects, images.pinned_vllm(), workdir=workdir / "pod", claims={model_claim: model_dir}
        )
        try:
            runner.run_init(timeout=300)
            began = time.monotonic()
            runner.start()
            port = listen_port(runner.launches["runtime"])
            assert port is not None
            served = ServedPod(
                runner, pod, facts, mirror, token, ca, model_dir / "model", url, f"127.0.0.1:{port}"
            )
            served.probe = wait_healthy(served, began + START_TIMEOUT)
            served.started_seconds = time.monotonic() - began
            yield served
        finally:
            runner.stop()
