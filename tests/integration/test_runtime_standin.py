"""The runtime stand-in reads orders and their tokens from the real API server.

For the SNI name ``<name>.<namespace>.svc`` it reads the InferenceService (its served model name),
the Secret ``<name>-auth`` (the token to require) and the Secret ``<name>-tls`` (the certificate to
serve, followed through a rotation); an External host is matched against the
orders' ``status.endpoint.url``. The probe used is the controller's own.
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from controller.live.probe import Prober
from devtools.cluster.handle import Cluster
from standins.runtime import RunningRuntime, make_ca, make_server_pair, start_runtime
from standins.runtime.endpoint_tls import leaf_serial

pytestmark = pytest.mark.cluster

GROUP, VERSION, PLURAL = "ai.deckhouse.io", "v1alpha1", "inferenceservices"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    cert, key = make_ca("platform CA (integration test)")
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(cert)
    return path, cert, key


@pytest.fixture(scope="module")
def runtime(cluster: Cluster, ca: tuple[Path, bytes, bytes]) -> Iterator[RunningRuntime]:
    with start_runtime(kubeconfig=str(cluster.kubeconfig), cache_seconds=0.0) as rt:
        yield rt


@pytest.fixture
def prober(runtime: RunningRuntime, ca: tuple[Path, bytes, bytes]) -> Iterator[Prober]:
    p = Prober(ca_file=str(ca[0]), address_override=runtime.address, timeout=10)
    yield p
    p.close()


def create_order(api: k8s.ApiClient, namespace: str, name: str, model: str) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "inferenceServiceClassName": "default-llm",
            "model": {"src": "HuggingFace", "ref": {"name": model}},
        },
    }
    objects: Any = k8s.CustomObjectsApi(api)
    created: dict[str, Any] = objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    return created


def issue(
    api: k8s.ApiClient, ca: tuple[Path, bytes, bytes], namespace: str, order: str, host: str = ""
) -> None:
    """``<order>-tls`` for the order's host, from the platform CA: cert-manager's part, played here."""
    cert, key = make_server_pair(ca[1], ca[2], (host or f"{order}.{namespace}.svc",))
    put_tls_secret(api, namespace, order, cert, key)


def create_token_secret(api: k8s.ApiClient, namespace: str, order: str, token: str) -> None:
    secret = k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name=f"{order}-auth", namespace=namespace),
        data={"token": base64.b64encode(token.encode()).decode()},
    )
    k8s.CoreV1Api(api).create_namespaced_secret(namespace, secret)


@pytest.mark.usefixtures("crds")
def test_the_token_comes_from_the_orders_auth_secret(
    api: k8s.ApiClient, namespace: str, prober: Prober, ca: tuple[Path, bytes, bytes]
) -> None:
    create_order(api, namespace, "chat", "Qwen/Qwen2.5-7B-Instruct")
    issue(api, ca, namespace, "chat")
    create_token_secret(api, namespace, "chat", "t0k3n-from-the-secret")
    url = f"https://chat.{namespace}.svc"
    ok = prober.probe(url, "t0k3n-from-the-secret")
    assert ok.ok, ok.detail
    assert prober.probe(url, None).detail.endswith("answered HTTP 401.")
    assert prober.probe(url, "another-token").detail.endswith("answered HTTP 401.")


@pytest.mark.usefixtures("crds")
def test_an_order_without_an_auth_secret_needs_no_token_and_lists_its_model(
    api: k8s.ApiClient, namespace: str, runtime: RunningRuntime, ca: tuple[Path, bytes, bytes]
) -> None:
    create_order(api, namespace, "embed", "BAAI/bge-large-en-v1.5")
    issue(api, ca, namespace, "embed")
    host = f"embed.{namespace}.svc"
    ctx = ssl.create_default_context(cafile=str(ca[0]))
    with httpx.Client(verify=ctx, trust_env=False) as http:
        resp = http.get(f"{runtime.url}/v1/models", headers={"Host": host}, extensions={"sni_hostname": host})
    assert resp.status_code == 200
    assert [m["id"] for m in resp.json()["data"]] == ["BAAI/bge-large-en-v1.5"]


@pytest.mark.usefixtures("crds")
def test_a_host_without_an_order_in_the_cluster_gets_no_certificate(
    namespace: str, prober: Prober, runtime: RunningRuntime
) -> None:
    refused = prober.probe(f"https://ghost.{namespace}.svc", None)
    assert not refused.ok
    seen = last_handshake(runtime, f"ghost.{namespace}.svc")
    assert (seen["ok"], seen["serial"]) == (False, None)


@pytest.mark.usefixtures("crds")
def test_an_external_host_is_matched_against_the_orders_endpoint_url(
    api: k8s.ApiClient, namespace: str, prober: Prober, ca: tuple[Path, bytes, bytes]
) -> None:
    create_order(api, namespace, "public", "Qwen/Qwen2.5-0.5B-Instruct")
    create_token_secret(api, namespace, "public", "external-token")
    host = f"public-{namespace}.inference.example.com"
    issue(api, ca, namespace, "public", host)
    k8s.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "public",
        {"status": {"endpoint": {"url": f"https://{host}", "type": "External"}}},
    )
    ok = prober.probe(f"https://{host}", "external-token")
    assert ok.ok, ok.detail
    assert prober.probe(f"https://{host}", None).detail.endswith("answered HTTP 401.")


def create_runtime_deployment(api: k8s.ApiClient, namespace: str, order: str, args: list[str]) -> None:
    """The order's Deployment as the controller renders it, with ``args`` for the runtime container."""
    from controller import render
    from tests.unit.controller.builders import make_class, make_order
    from tests.unit.controller.test_render import SETTINGS, Plan

    owner = make_order(metadata={"namespace": namespace, "name": order})
    dep = render.deployment(owner, Plan(args=args), make_class().spec, SETTINGS, revision=None)
    dep["metadata"].pop("ownerReferences")
    apps: Any = k8s.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, dep)


@pytest.mark.usefixtures("crds")
def test_an_order_whose_runtime_args_vllm_would_refuse_never_answers(
    api: k8s.ApiClient, namespace: str, prober: Prober, ca: tuple[Path, bytes, bytes]
) -> None:
    create_order(api, namespace, "bad", "Qwen/Qwen2.5-7B-Instruct")
    issue(api, ca, namespace, "bad")
    create_runtime_deployment(api, namespace, "bad", ["--model", "/models/model", "--api-key-file", "/x"])
    refused = prober.probe(f"https://bad.{namespace}.svc", None)
    assert refused.detail.endswith("answered HTTP 503."), refused.detail


@pytest.mark.usefixtures("crds")
def test_an_order_whose_runtime_args_are_the_launch_plans_answers(
    api: k8s.ApiClient, namespace: str, prober: Prober, ca: tuple[Path, bytes, bytes]
) -> None:
    from controller.planner.vllm import VllmLaunch, vllm_args
    from testkit.planner import LLAMA_8B

    launch = VllmLaunch(
        facts=LLAMA_8B,
        endpoint_type="Chat",
        served_model_name=LLAMA_8B.name,
        tensor_parallel_size=2,
        max_model_len=8192,
        gpu_memory_utilization=0.9,
        quantization="none",
        compute_capability=(9, 0),
    )
    create_order(api, namespace, "good", "Qwen/Qwen2.5-7B-Instruct")
    issue(api, ca, namespace, "good")
    create_runtime_deployment(api, namespace, "good", vllm_args(launch))
    ok = prober.probe(f"https://good.{namespace}.svc", None)
    assert ok.ok, ok.detail


def put_tls_secret(api: k8s.ApiClient, namespace: str, order: str, cert: bytes, key: bytes) -> None:
    """Create or replace ``<order>-tls`` as cert-manager writes it (type kubernetes.io/tls)."""
    core: Any = k8s.CoreV1Api(api)
    secret = k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name=f"{order}-tls", namespace=namespace),
        type="kubernetes.io/tls",
        data={"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()},
    )
    try:
        core.replace_namespaced_secret(f"{order}-tls", namespace, secret)
    except k8s.ApiException as e:
        if e.status != 404:
            raise
        core.create_namespaced_secret(namespace, secret)


def last_handshake(runtime: RunningRuntime, host: str, serial: str | None = None) -> dict[str, Any]:
    """The runtime's last recorded handshake for ``host``. With ``serial``, waits (up to 5 s) for one
    that served it: the stand-in records a failed handshake from its TLS thread, which can come a
    moment after the client has seen the failure."""
    deadline = time.monotonic() + (5.0 if serial is not None else 0.0)
    while True:
        last = [h for h in runtime.handshakes() if h["host"] == host][-1]
        if serial is None or last["serial"] == serial or time.monotonic() > deadline:
            return last
        time.sleep(0.1)


@pytest.mark.usefixtures("crds")
def test_the_orders_tls_secret_is_served_and_its_rotation_reaches_new_connections(
    api: k8s.ApiClient, namespace: str, runtime: RunningRuntime, ca: tuple[Path, bytes, bytes], prober: Prober
) -> None:
    create_order(api, namespace, "tls", "Qwen/Qwen2.5-0.5B-Instruct")
    host = f"tls.{namespace}.svc"
    url = f"https://{host}"
    assert not prober.probe(url, None).ok, "no certificate before the platform issued one"
    assert (last_handshake(runtime, host)["ok"], last_handshake(runtime, host)["serial"]) == (False, None)
    served = []
    for _ in range(2):  # issued, then renewed: a new key and serial in the same Secret
        cert, key = make_server_pair(ca[1], ca[2], (host,))
        put_tls_secret(api, namespace, "tls", cert, key)
        ok = prober.probe(url, None)
        assert ok.ok, ok.detail
        seen = last_handshake(runtime, host, leaf_serial(cert))
        assert (seen["source"], seen["serial"], seen["ok"]) == ("secret", leaf_serial(cert), True)
        served.append(seen["serial"])
    assert served[0] != served[1]
    assert [r["serial"] for r in runtime.requests() if r["host"] == host][-1] == served[1]

    rogue_ca = make_ca("not the platform CA")
    rogue, rogue_key = make_server_pair(*rogue_ca, (host,))
    put_tls_secret(api, namespace, "tls", rogue, rogue_key)
    refused = prober.probe(url, None)
    assert not refused.ok
    assert "CERTIFICATE_VERIFY_FAILED" in refused.detail, refused.detail
    seen = last_handshake(runtime, host, leaf_serial(rogue))
    assert (seen["source"], seen["serial"], seen["ok"]) == ("secret", leaf_serial(rogue), False)

    k8s.CoreV1Api(api).delete_namespaced_secret("tls-tls", namespace)
    assert not prober.probe(url, None).ok, "the Secret gone, nothing is served: the stand-in mints nothing"
    assert last_handshake(runtime, host)["serial"] is None
