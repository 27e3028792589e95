"""The guide's order (examples/support-llm.yaml) to Ready, its progress as it goes, and a curl of its
endpoint, which the runtime stand-in answers; then a tiny model's order (examples/tiny-chat.yaml), which a
real vLLM serves on this machine (devtools/podrunner/plane.py), and a curl that returns a real chat
completion. Both go through the same entry address. The pure helpers (the progress line, when to stop
waiting, the curl command) are tested in tests/unit/test_demo.py."""

from __future__ import annotations

import base64
import json
import pathlib
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import yaml

from hack.demo.state import ROOT, Demo, say
from shared import reasons

EXAMPLE = ROOT / "examples" / "support-llm.yaml"
TINY_EXAMPLE = ROOT / "examples" / "tiny-chat.yaml"


def chain_summary(obj: Mapping[str, Any]) -> str:
    """``Pending: Planned=False NoCapacity`` — the phase and the first condition of the chain not True."""
    status = obj.get("status") or {}
    phase = status.get("phase") or "(no status yet)"
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    for kind in reasons.CHAIN:
        cond = conditions.get(kind)
        if cond is None:
            return f"{phase}: {kind} not reported yet"
        if cond.get("status") != "True":
            text = f"{phase}: {kind}={cond.get('status')} {cond.get('reason', '')}".rstrip()
            message = cond.get("message")
            return f"{text} - {message}" if message else text
    return f"{phase}: {reasons.READY}=True {conditions[reasons.READY].get('reason', '')}".rstrip()


def outcome(obj: Mapping[str, Any]) -> str | None:
    """``ready`` / ``failed`` when the order reached an end the demo can report; None while waiting."""
    status = obj.get("status") or {}
    if status.get("observedGeneration") != (obj.get("metadata") or {}).get("generation"):
        return None
    phase = status.get("phase")
    if phase in ("Ready", "Degraded"):
        return "ready"
    if phase == "Failed":
        return "failed"
    return None


def curl_command(
    url: str, *, token: str | None, ca_file: pathlib.Path, address: str, chat: str | None = None
) -> list[str]:
    """A curl of ``<url>/v1/models`` (with ``chat``, a model name: a chat completion of
    ``<url>/v1/chat/completions``) through the entry address ``address`` (host:port).

    ``--connect-to`` keeps the endpoint's name in the URL, the SNI and the certificate check, and only
    changes where the TCP connection goes (``--resolve`` cannot change the port).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    cmd = ["curl", "-sS", "--cacert", str(ca_file), "--connect-to", f"{host}:{port}:{address}"]
    if token is not None:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    if chat is None:
        return [*cmd, url.rstrip("/") + "/v1/models"]
    body = {"model": chat, "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 16}
    cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    return [*cmd, url.rstrip("/") + "/v1/chat/completions"]


def shown(cmd: Sequence[str], token: str | None) -> str:
    """The command as a person would type it, with the token as "$TOKEN"."""
    words = [shlex.quote(w) for w in cmd]
    text = " ".join(words)
    if token:
        text = text.replace(shlex.quote(f"Authorization: Bearer {token}"), '"Authorization: Bearer $TOKEN"')
    return text


def order(demo: Demo, *, timeout: float = 600) -> int:
    """The guide's order, then (with the plane runner up) the tiny model's: each to Ready and a curl."""
    rc = order_one(demo, EXAMPLE, "the guide's order", timeout=timeout)
    if rc == 0 and demo.read("planeRunner"):
        rc = order_one(demo, TINY_EXAMPLE, "a tiny model on a real vLLM", timeout=timeout, real=True)
    return rc


def order_one(demo: Demo, example: pathlib.Path, what: str, *, timeout: float, real: bool = False) -> int:
    doc = yaml.safe_load(example.read_text())
    ns, name = doc["metadata"]["namespace"], doc["metadata"]["name"]
    say(f"{what}: kubectl apply -f {example.relative_to(demo.root)} (namespace {ns})")
    demo.kubectl("create", "namespace", ns, check=False)
    demo.kubectl("apply", "-f", str(example))
    t0 = time.monotonic()
    last = ""
    obj: dict[str, Any] = {}
    while True:
        obj = json.loads(demo.kubectl("get", "inferenceservice", name, "-n", ns, "-o", "json"))
        line = chain_summary(obj)
        if line != last:
            print(f"   [{time.monotonic() - t0:5.1f}s] {line}", flush=True)
            last = line
        end = outcome(obj)
        if end is not None:
            break
        if time.monotonic() - t0 > timeout:
            say(f"not Ready after {timeout:.0f}s; logs in {demo.state}")
            return 1
        time.sleep(1)
    print(demo.kubectl("get", "inferenceservice", name, "-n", ns))
    status = obj["status"]
    print(yaml.safe_dump({"status": {k: v for k, v in status.items() if k != "conditions"}}, sort_keys=False))
    if end == "failed":
        say("the order Failed; the conditions say why (docs/faq.md):")
        print(
            demo.kubectl(
                "get",
                "inferenceservice",
                name,
                "-n",
                ns,
                "-o",
                'jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\\n"}{end}',
            )
        )
        return 1
    say(f"Ready in {time.monotonic() - t0:.0f}s")
    return call_endpoint(demo, obj, real=real)


def call_endpoint(demo: Demo, obj: Mapping[str, Any], *, real: bool = False) -> int:
    """A curl of the order's endpoint through the entry address: ``/v1/models`` of the stand-in, or
    (``real``) a chat completion from the real vLLM."""
    status = obj["status"]
    ns = obj["metadata"]["namespace"]
    url = status["endpoint"]["url"]
    token: str | None = None
    secret = status.get("authSecretName")
    if secret:
        raw = demo.kubectl("get", "secret", secret, "-n", ns, "-o", "jsonpath={.data.token}")
        token = base64.b64decode(raw).decode()
    model = obj["spec"]["model"]["ref"]["name"] if real else None
    cmd = curl_command(
        url,
        token=token,
        ca_file=demo.pki / "platform-ca.crt",
        address=demo.read("runtimeAddress"),
        chat=model,
    )
    who = (
        "a real vLLM (CPU build) answers it"
        if real
        else "the runtime stand-in answers it (real runtimes need GPUs)"
    )
    say(f"endpoint {url} ({status['endpoint'].get('type')}); {who}")
    print("   export KUBECONFIG=" + str(demo.kubeconfig))
    if secret:
        print(f"   TOKEN=$(kubectl get secret {secret} -n {ns} -o jsonpath='{{.data.token}}' | base64 -d)")
    print("   " + shown(cmd, token))
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(res.stdout.strip() or res.stderr.strip())
    return res.returncode


def goodbye(demo: Demo, *, with_order: bool) -> None:
    bin_dir = demo.bin_dir()
    next_step = (
        "kubectl get inferenceservice support-llm -n support -o yaml"
        if with_order
        else f"kubectl create namespace support && kubectl apply -f {EXAMPLE.relative_to(demo.root)}"
    )
    print(
        f"""
Everything keeps running. To use it:
   export KUBECONFIG={demo.kubeconfig}
   export PATH={bin_dir}:$PATH        # our kubectl, {bin_dir / "kubectl"}
   kubectl get inferenceservices -A
   {next_step}
Logs and pids: {demo.state}/ (controller.log, webhook.log, hub-mirror.log, runtime-standin.log, issuer-standin.log,
   plane-runner.log; the real vLLM's own logs under podrunner/pods/)
Stop everything: make down"""
    )
