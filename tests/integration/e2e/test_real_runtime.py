"""A tiny-model order on the local plane is served by a real vLLM (issue 20, item 2).

The plane runner (devtools/podrunner/plane.py) runs the order's pod as processes with its rendered
launch: the rendered fetcher fills the model claim from the loopback mirror with the ``hf`` CLI of the
pinned image's huggingface_hub, and vLLM 0.32 (CPU build) ends TLS with the ``<order>-tls`` that
cert-manager issued. The controller's probe, and this test, reach the endpoint through the one entry
address (``probeAddressOverride``, the runtime stand-in's), by SNI; the stand-in passes the TLS bytes
through to the process and answers nothing itself.

Checked in the real API server and on the real process: the order reaches Ready; ``/v1/models`` says
``owned_by: vllm``; a chat completion answers with the token; no inference or tokenizer route answers
200 without it; the pod's status is the processes' (a SIGKILLed vLLM shows terminated with 137 and the
order leaves Ready, then the restart serves again); deleting the order stops every process.

Slow: two vLLM starts (about 70 s each here).
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import ssl
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from devtools import tiny_models
from devtools.wait import wait_for
from shared import names
from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster

PLATFORM_REAL_RUNTIME = True
MODEL = tiny_models.CHAT.repo_id
ORDER = "tiny-chat"
READY_TIMEOUT = 900.0
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hello model"}], "max_tokens": 8}
Obj = dict[str, Any]


@dataclass
class Served:
    platform: Platform
    namespace: str
    host: str  # the endpoint's host: <order>.<ns>.svc
    token: str

    def client(self, token: str | None = None) -> httpx.Client:
        """A client of the entry address that sends the endpoint's host as SNI and ``Host`` and trusts
        the platform CA, as the controller's probe does."""
        ctx = ssl.create_default_context(cafile=str(self.platform.ca_file))
        headers = {"Host": self.host, **({"Authorization": f"Bearer {token}"} if token else {})}
        client = httpx.Client(
            base_url=f"https://{self.platform.runtime.address}", verify=ctx, headers=headers, timeout=60
        )
        client.event_hooks["request"] = [lambda r: r.extensions.__setitem__("sni_hostname", self.host)]
        return client

    def order(self) -> Obj:
        return self.platform.order(self.namespace, ORDER)

    def pod(self) -> Obj:
        listed = k8s.CoreV1Api(self.platform.api).list_namespaced_pod(
            self.namespace, label_selector=f"{names.LABEL_ORDER}={ORDER}"
        )
        api: Any = self.platform.api  # the client is untyped
        items = api.sanitize_for_serialization(listed)["items"]
        pods = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        return dict(pods[0])


def vllm_pids() -> list[int]:
    """The processes of real vLLM API servers on this machine (their command line names the module)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if b"vllm.entrypoints.openai.api_server" in argv:
                    out.append(int(entry.name))
    return out


@pytest.fixture(scope="module")
def served(platform: Platform) -> Iterator[Served]:
    ns = f"e-real-{uuid.uuid4().hex[:6]}"
    platform.kubectl("create", "namespace", ns)
    try:
        klass = platform.create_class({}, prefix="real")
        began = time.monotonic()
        platform.create_order(ns, ORDER, hf(MODEL), klass=klass)
        obj = platform.wait_phase(ns, ORDER, "Ready", timeout=READY_TIMEOUT)
        print(f"real runtime: {ORDER} Ready {time.monotonic() - began:.1f} s after the apply")
        raw = platform.kubectl("get", "secret", obj["status"]["authSecretName"], "-n", ns,
                               "-o", "jsonpath={.data.token}").stdout  # fmt: skip
        host = obj["status"]["endpoint"]["url"].removeprefix("https://").split("/")[0].split(":")[0]
        yield Served(platform, ns, host, base64.b64decode(raw).decode())
    finally:
        platform.delete_namespace_and_wait(ns)


def test_the_order_is_ready_on_a_real_vllm_through_the_entry_address(served: Served) -> None:
    with served.client(served.token) as c:
        models = c.get("/v1/models")
        assert models.status_code == 200, models.text
        assert [(m["id"], m["owned_by"]) for m in models.json()["data"]] == [(MODEL, "vllm")]
        chat = c.post("/v1/chat/completions", json=CHAT)
        assert chat.status_code == 200, chat.text
        assert 0 < chat.json()["usage"]["completion_tokens"] <= 8
    runtime = served.platform.runtime
    assert not [r for r in runtime.requests() if r["host"] == served.host]  # the stand-in answered nothing
    # Listed once the connection ended (the client closed it above). Those with no backend are the
    # probe's while vLLM was loading: claimed, closed unanswered.
    passed = wait_for(
        lambda: [f for f in runtime.forwarded() if f["host"] == served.host and f["backend"]],
        bool,
        timeout=30,
        message="the stand-in to list the connections it passed through",
    )
    assert all(str(f["backend"]).startswith("127.0.0.1:") and f["down"] for f in passed), passed
    status = served.order()["status"]
    assert status["model"]["architecture"] == "LlamaForCausalLM"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/completions"),
        ("GET", "/v1/models"),
        ("POST", "/invocations"),
        ("POST", "/tokenize"),
        ("POST", "/detokenize"),
    ],
)
def test_no_inference_or_tokenizer_route_answers_without_the_token(
    served: Served, method: str, path: str
) -> None:
    body = {"model": MODEL, "prompt": "hi", "tokens": [1, 2], **CHAT}
    with served.client() as c:
        refused = c.request(method, path, json=body if method == "POST" else None)
        assert refused.status_code == 401, (path, refused.status_code, refused.text[:200])
        assert c.get("/health").status_code == 200  # the one open route
    with served.client("not-the-token") as c:
        assert c.request(method, path, json=body if method == "POST" else None).status_code == 401


def test_the_pod_status_is_the_processes_and_a_killed_vllm_fails_then_serves_again(served: Served) -> None:
    pod = served.pod()
    (runtime,) = pod["status"]["containerStatuses"]
    assert runtime["ready"] and "running" in runtime["state"]
    inits = {s["name"]: s for s in pod["status"]["initContainerStatuses"]}
    assert inits["model-fetcher"]["state"]["terminated"]["exitCode"] == 0
    pids = vllm_pids()
    assert pids, "no vLLM process runs"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)

    def failed(p: Obj) -> bool:
        (st,) = p["status"]["containerStatuses"]
        return not st["ready"] and st.get("lastState", {}).get("terminated", {}).get("exitCode") == 137

    wait_for(served.pod, failed, timeout=60, message="the pod to show the killed runtime (exit code 137)")
    wait_for(
        served.order,
        lambda o: served.platform.condition(o, "Ready").get("status") != "True",
        timeout=60,
        message="the order to leave Ready while its runtime is down",
    )
    killed = time.monotonic()
    served.platform.wait_phase(served.namespace, ORDER, "Ready", timeout=READY_TIMEOUT)
    print(f"real runtime: Ready again {time.monotonic() - killed:.1f} s after the SIGKILL")
    (runtime,) = served.pod()["status"]["containerStatuses"]
    assert runtime["restartCount"] >= 1 and runtime["ready"]
    with served.client(served.token) as c:
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200


def test_deleting_the_order_stops_its_processes(served: Served) -> None:
    assert vllm_pids()
    served.platform.kubectl("delete", "inferenceservice", ORDER, "-n", served.namespace, "--wait=true")
    wait_for(vllm_pids, lambda pids: pids == [], timeout=120, message="every vLLM process to end")
