"""The activator on the real API server, under its own ServiceAccount, behind the runtime stand-in's entry
address (the plane's "kube-proxy"): an order at zero, by hand, as the controller would leave it.

The order's ``<name>-tls`` (signed by the platform CA the activator trusts) and ``<name>-auth`` Secrets,
labelled with the order, and the controller's ``<name>-activator`` EndpointSlice (the activator's
address, managed by the controller, for the order's Service) are written by the test; no controller
runs. Every request goes to the stand-in's entry address with the order's SNI, as a client of the
order's Service would, and is answered through it:

- without the token: 401 from the activator, and the held gauge never rises;
- with the token: held (the gauge is 1 on the activator's ``/metrics``), 503 with ``Retry-After``
  when the short hold bound runs out;
- held, then the order gets a replica (the stand-in serves it: its pods are registered; and an
  EndpointSlice of Kubernetes' EndpointSlice controller lists a ready endpoint): the held request is
  forwarded back through the stand-in's address to the order's own replica and answered 200, and the
  forward does not loop back to the activator.
"""

from __future__ import annotations

import base64
import concurrent.futures
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client as k8s

from devtools.cluster.handle import Cluster, Kubectl
from devtools.product.controller import NAMESPACE
from shared.names import LABEL_ORDER
from standins.runtime import RunningRuntime, make_ca, make_server_pair, start_runtime
from testkit.activator import RunningActivator, running_activator

pytestmark = pytest.mark.cluster

ORDER = "chat"
TOKEN = "t0ken-of-the-order"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
MAX_HOLD = 4.0
RETRY_AFTER = 7


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    """The platform CA: the orders' certificates chain to it, the activator's forwards verify against it."""
    cert, key = make_ca("platform CA (activator plane test)")
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(cert)
    return path, cert, key


@pytest.fixture(scope="module")
def runtime(cluster: Cluster) -> Iterator[RunningRuntime]:
    with start_runtime(kubeconfig=str(cluster.kubeconfig), cache_seconds=0.5) as rt:
        yield rt


@pytest.fixture(scope="module")
def activator(
    cluster: Cluster,
    kubectl: Kubectl,
    runtime: RunningRuntime,
    ca: tuple[Path, bytes, bytes],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningActivator]:
    kubectl("create", "namespace", NAMESPACE, check=False)
    with running_activator(
        cluster,
        kubectl,
        upstream=runtime.address,
        ca_file=ca[0],
        log_dir=tmp_path_factory.mktemp("activator"),
        max_hold_seconds=MAX_HOLD,
        retry_after_seconds=RETRY_AFTER,
    ) as running:
        yield running


def labelled(namespace: str, name: str, **extra: Any) -> k8s.V1ObjectMeta:
    return k8s.V1ObjectMeta(name=name, namespace=namespace, labels={LABEL_ORDER: ORDER}, **extra)


def write_order_secrets(api: k8s.ApiClient, namespace: str, pair: tuple[bytes, bytes]) -> None:
    core = k8s.CoreV1Api(api)
    core.create_namespaced_secret(
        namespace,
        k8s.V1Secret(
            metadata=labelled(namespace, f"{ORDER}-tls"),
            type="kubernetes.io/tls",
            data={
                "tls.crt": base64.b64encode(pair[0]).decode(),
                "tls.key": base64.b64encode(pair[1]).decode(),
            },
        ),
    )
    core.create_namespaced_secret(
        namespace,
        k8s.V1Secret(
            metadata=labelled(namespace, f"{ORDER}-auth"),
            data={"token": base64.b64encode(TOKEN.encode()).decode()},
        ),
    )


def endpoint_slice(namespace: str, name: str, manager: str, address: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": ORDER,
                "endpointslice.kubernetes.io/managed-by": manager,
                LABEL_ORDER: ORDER,
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
    }


def apply(kubectl: Kubectl, *docs: dict[str, Any]) -> None:
    kubectl("apply", "--server-side", "--field-manager=e2e", "-f", "-", input=yaml.safe_dump_all(docs))


class Client:
    """Requests to the order's host at the stand-in's entry address, verified against the platform CA."""

    def __init__(self, runtime: RunningRuntime, ca_file: Path, host: str) -> None:
        self.url = runtime.url
        self.host = host
        self.context = ssl.create_default_context(cafile=str(ca_file))

    def chat(self, token: str | None, timeout: float = 60) -> httpx.Response:
        headers = {"host": self.host}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        with httpx.Client(verify=self.context, trust_env=False, timeout=timeout) as http:
            return http.post(
                f"{self.url}/v1/chat/completions",
                headers=headers,
                json={"model": MODEL, "messages": [{"role": "user", "content": "hello"}]},
                extensions={"sni_hostname": self.host},
            )


def wait_until(check: Any, timeout: float, message: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{message} within {timeout} s", pytrace=False)
        time.sleep(interval)


def to_activator(runtime: RunningRuntime, host: str) -> int:
    return sum(1 for f in runtime.forwarded() if f["host"] == host and f["activator"])


def test_an_order_at_zero_is_held_by_the_activator_behind_the_entry_address(
    api: k8s.ApiClient,
    kubectl: Kubectl,
    namespace: str,
    ca: tuple[Path, bytes, bytes],
    runtime: RunningRuntime,
    activator: RunningActivator,
) -> None:
    host = f"{ORDER}.{namespace}.svc"
    kubeconfig = yaml.safe_load(activator.process.kubeconfig.read_text())
    assert kubeconfig["users"][0]["name"] == "system:serviceaccount:d8-inference:inference-activator"
    pair = make_server_pair(ca[1], ca[2], (host,))
    write_order_secrets(api, namespace, pair)
    k8s.CoreV1Api(api).create_namespaced_service(  # the order's Service, selectorless here: the
        namespace,  # slices below are written by hand, and Kubernetes' controller leaves them alone
        k8s.V1Service(
            metadata=labelled(namespace, ORDER),
            spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(name="https", port=443, target_port=8443)]),
        ),
    )
    a_host, a_port = activator.address.rsplit(":", 1)
    apply(
        kubectl,
        endpoint_slice(
            namespace, f"{ORDER}-activator", "inference-controller.ai.deckhouse.io", a_host, int(a_port)
        ),
    )
    client = Client(runtime, ca[0], host)

    # Without the token: 401 from the activator (once it has read the order's Secrets), nothing held.
    def refused() -> bool:
        try:
            return client.chat(None).status_code == 401
        except httpx.HTTPError:  # the activator has not read the order's certificate yet
            return False

    t0 = time.monotonic()
    wait_until(refused, 30, "a request without the token answered 401")
    first_401_s = time.monotonic() - t0
    answer = client.chat("wrong-token")
    assert answer.status_code == 401 and answer.json() == {"error": "Unauthorized"}
    assert activator.sample("inference_activator_requests_refused_total", reason="unauthorized") >= 2
    assert activator.held(namespace, ORDER) == 0
    assert activator.sample("inference_activator_wakeups_total", namespace=namespace, order=ORDER) == 0
    assert to_activator(runtime, host) >= 2  # the stand-in passed them through to the activator

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        # With the token: held (gauge 1), then 503 + Retry-After when the bound runs out.
        t0 = time.monotonic()
        call = pool.submit(client.chat, TOKEN)
        wait_until(lambda: activator.held(namespace, ORDER) == 1, 10, "the held gauge at 1")
        held_seen_s = time.monotonic() - t0
        busy = call.result(timeout=MAX_HOLD + 10)
        busy_s = time.monotonic() - t0
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == str(RETRY_AFTER)
        assert MAX_HOLD - 0.5 <= busy_s < MAX_HOLD + 5
        assert activator.held(namespace, ORDER) == 0
        assert activator.sample("inference_activator_wakeups_total", namespace=namespace, order=ORDER) == 1

        # Held again; the order gets a replica the stand-in serves, listed ready by "Kubernetes'"
        # EndpointSlice controller: the held request is forwarded through the entry address to it.
        t0 = time.monotonic()
        call = pool.submit(client.chat, TOKEN)
        wait_until(lambda: activator.held(namespace, ORDER) == 1, 10, "the held gauge at 1 again")
        passed = to_activator(runtime, host)
        runtime.register(namespace, ORDER, model=MODEL, token=TOKEN, tls=pair)
        runtime.set_pods(namespace, ORDER, [f"{ORDER}-0"])
        t_ready = time.monotonic()
        apply(
            kubectl,
            endpoint_slice(
                namespace, f"{ORDER}-abcde", "endpointslice-controller.k8s.io", "192.0.2.10", 8443
            ),
        )
        served = call.result(timeout=MAX_HOLD + 10)
        ready_to_answer_s = time.monotonic() - t_ready
        assert served.status_code == 200, served.text
        assert served.json()["model"] == MODEL
        assert activator.held(namespace, ORDER) == 0
        assert activator.sample("inference_activator_hold_seconds_count", outcome="forwarded") == 1
        answered = [r for r in runtime.requests() if r["host"] == host and r["status"] == 200]
        assert len(answered) == 1  # the stand-in's own replica answered the forwarded request ...
        # ... and did not loop back to the activator: the one connection passed to it is the held
        # client's own (recorded once it ended), the activator's forward is not among them.
        wait_until(lambda: to_activator(runtime, host) == passed + 1, 5, "the held connection recorded")

    # Warm: a new request goes to the order's replica directly, not through the activator.
    direct = client.chat(TOKEN)
    assert direct.status_code == 200
    time.sleep(0.5)  # a connection is recorded when it ends
    assert to_activator(runtime, host) == passed + 1
    print(
        f"first 401 after {first_401_s:.2f} s; gauge 1 after {held_seen_s:.2f} s; 503 after {busy_s:.2f} s "
        f"(bound {MAX_HOLD} s); replica listed ready -> 200 in {ready_to_answer_s:.2f} s"
    )
