"""A restart costs nothing, and a conflicting status write loses nothing.

- Killing the controller (SIGKILL) and starting it again: a steady order gets zero writes and its
  token is unchanged. Writes are counted with the API server's own metrics
  (apiserver_request_total), not with the controller's word for it; the controller's own count
  (every write it sends, the model-facts ConfigMap included, and its Events apart) is zero too.
- The controller's write count sees the model-facts ConfigMap: with the ConfigMap gone, a new
  controller resolving a model creates it, and the count names that write (kind ConfigMap).
- A 409 on the status write is raised for a retry, and the other writer's change survives it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections import Counter
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.modelhub.store import NAME as FACTS
from shared.api.order import InferenceService
from testkit.platform import NS, Platform, controller_writes, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE"}
# Resources only the controller writes (others' writes to these happen on other paths):
# deployments and HPAs count only without a subresource (the controllers write /status and /scale).
OURS_ANY = {"inferenceservices", "resourceclaimtemplates", "certificates", "services", "secrets"}
OURS_MAIN = {"deployments", "horizontalpodautoscalers", "persistentvolumeclaims"}
SAMPLE = re.compile(r"^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$")


def api_writes(p: Platform) -> Counter[str]:
    """Write requests the API server has served, per resource/subresource, for the resources we own."""
    out: Counter[str] = Counter()
    for line in p.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(kv.split("=", 1) for kv in re.findall(r'(\w+="[^"]*")', m.group(1)))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("verb") not in WRITE_VERBS:
            continue
        res, sub = labels.get("resource", ""), labels.get("subresource", "")
        if res in OURS_ANY or (res in OURS_MAIN and sub == ""):
            out[f"{labels['verb']} {res}/{sub}"] += int(float(m.group(2)))
    return out


def written(p: Platform) -> Counter[tuple[str, str]]:
    """The controller's own count of its write requests, by (kind, verb)."""
    out: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(p.controller.metrics()):
        for sample in family.samples:
            if sample.name == "inference_controller_api_writes_total":
                out[(sample.labels["kind"], sample.labels["verb"])] += int(sample.value)
    return out


def test_a_restarted_controller_makes_zero_writes_for_a_steady_order(platform: Platform, ns: str) -> None:
    before_create = controller_writes(platform)
    events_before = controller_writes(platform, events=True)
    by_kind = written(platform)
    start = time.monotonic()
    platform.create_order(ns, "steady", hf(SMALL))
    platform.wait_phase(ns, "steady", "Ready", timeout=90)
    seconds = time.monotonic() - start
    to_ready = controller_writes(platform) - before_create
    events = controller_writes(platform, events=True) - events_before
    kinds = written(platform) - by_kind
    print(f"controller writes from creation to Ready: {to_ready:.0f}, and {events:.0f} Events")
    print(f"by kind and verb: {dict(sorted(kinds.items()))}")
    print(f"from the apply to phase Ready: {seconds:.1f} s")
    assert to_ready > 0 and events > 0, "the count sees the order's writes and its Events"
    time.sleep(3)  # let the HPA and the first probes settle
    order = platform.order(ns, "steady")
    secret = platform.get("secret", "steady-auth", ns)
    assert secret is not None
    platform.controller.kill()
    before = api_writes(platform)
    platform.controller.start()
    time.sleep(8)  # many probe periods (1 s) and a full resync of the caches
    after = api_writes(platform)
    diff = {k: after[k] - before[k] for k in after if after[k] != before[k]}
    assert diff == {}, f"writes after a restart: {diff}"
    assert written(platform) == Counter(), "the new controller counted no write, no Event"
    again = platform.order(ns, "steady")
    assert again["metadata"]["resourceVersion"] == order["metadata"]["resourceVersion"]
    secret_after = platform.get("secret", "steady-auth", ns)
    assert secret_after is not None
    assert secret_after["data"]["token"] == secret["data"]["token"]
    assert secret_after["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
    assert len(base64.b64decode(secret["data"]["token"])) >= 43  # 32 random bytes, url-safe base64


def test_the_write_count_sees_the_model_facts_configmap(platform: Platform, ns: str) -> None:
    """The facts store's ConfigMap is deleted and the controller restarted (its memory of the facts
    gone with it): resolving the order's model writes the facts, creating the ConfigMap."""
    platform.kubectl("delete", "configmap", FACTS, "-n", NS, "--ignore-not-found")
    platform.controller.restart()
    assert written(platform) == Counter()
    platform.create_order(ns, "facts", hf(SMALL))
    platform.wait_phase(ns, "facts", "Ready", timeout=90)
    stored = platform.get("configmap", FACTS, NS)
    assert stored is not None and len(stored["data"]) == 1, "the facts of the model were written"
    got = written(platform)
    print(f"controller writes, facts ConfigMap deleted, to Ready: {dict(got)}")
    # The merge patch finds no ConfigMap (404, a write the API server answered), then the create.
    assert got[("ConfigMap", "patch")] == 1
    assert got[("ConfigMap", "create")] == 1
    assert got[("Event", "create")] > 0


def test_a_409_on_status_is_retried_without_losing_the_other_writers_change(
    platform: Platform, ns: str
) -> None:
    from controller.__main__ import parse_args
    from controller.config.settings import parse_settings
    from controller.kinds import Cache
    from controller.kube import errors as kerr
    from controller.kube.client import load_api_client
    from controller.manager import Controller

    platform.create_order(ns, "racy", hf(SMALL))
    platform.wait_phase(ns, "racy", "Ready", timeout=90)
    platform.controller.stop()  # this test drives a reconciler in-process
    try:
        stale = platform.order(ns, "racy")
        # Another writer adds its own condition through /status.
        audit = {
            "type": "ExternalAudit",
            "status": "True",
            "reason": "Audited",
            "message": "by a test",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        platform.kubectl(
            "patch",
            "inferenceservice",
            "racy",
            "-n",
            ns,
            "--subresource=status",
            "--type=json",
            "-p",
            json.dumps([{"op": "add", "path": "/status/conditions/-", "value": audit}]),
        )
        api = load_api_client(kubeconfig=str(platform.cluster.kubeconfig))
        cm = platform.get("configmap", "inference-settings", NS)
        assert cm is not None
        ctl = Controller(
            parse_args(["--no-leader-elect", "--namespace", NS]), api, parse_settings(cm["data"], os.environ)
        )
        ctl.start_informers()
        try:
            # The reconciler reads an order older than the other writer's change, and its status
            # differs from what it computes (endpoint dropped), so it must write: the API server
            # refuses the stale resourceVersion with a 409.
            stale["status"].pop("endpoint")
            real_get = ctl.store.get

            def stale_get(cache: Cache, namespace: str | None, name: str) -> dict[str, Any] | None:
                if cache is Cache.ORDERS and name == "racy":
                    return stale
                return real_get(cache, namespace, name)

            ctl.store.get = stale_get  # type: ignore[method-assign]
            with pytest.raises(kerr.Conflict):
                ctl.reconciler.reconcile_order(ns, "racy")
            # The retry reads the order again, as the work queue's rate-limited requeue does.
            ctl.store.get = real_get  # type: ignore[method-assign]
            wait_for(
                lambda: ctl.store.get(Cache.ORDERS, ns, "racy") or {},
                lambda o: any(c["type"] == "ExternalAudit" for c in o["status"]["conditions"]),
                message="the informer to see the other writer's condition",
            )
            ctl.reconciler.reconcile_order(ns, "racy")
        finally:
            ctl.stop()
            api.close()
        final = platform.order(ns, "racy")
        types = [c["type"] for c in final["status"]["conditions"]]
        assert "ExternalAudit" in types, "the other writer's change survived"
        assert InferenceService.model_validate(final).status.endpoint is not None
        assert final["status"]["phase"] == "Ready"
    finally:
        platform.controller.start()
