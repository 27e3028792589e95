"""The plane runner: the local (KWOK) plane's pods of tiny models, served by a real vLLM. I/O.

``python -m devtools.podrunner --kubeconfig K --standin-control URL --state DIR`` watches the plane's
pods (every second) and, for each pod that ``adoption`` says runs here (the pinned vLLM image, files
of at most 64 MiB), acts as its kubelet:

1. it tells the runtime stand-in, the one entry address of the plane (module setting
   ``probeAddressOverride``), that a real process serves the order (``PUT /_standin/routes/...`` with
   no backend), so the stand-in never answers for it, not even before the process is up;
2. it runs the pod with ``PodRunner``: the rendered fetcher downloads from the Hub (mirror) with the
   ``hf`` CLI of the pinned image's huggingface_hub into the directory of the pod's model claim
   (``<state>/claims/<namespace>/<claim>``: a restarted pod reuses the download, as a volume would),
   the token guard is written, vLLM starts with the order's ``<order>-tls`` and ends TLS itself;
3. it reports the pod's status as a kubelet would (``adoption.status_patch``): the init containers,
   then ``Ready`` once the rendered readiness probe (``GET /health`` over HTTPS) passes on the
   process's port, and only then routes the order's SNI name to that port; the stand-in passes the
   TLS bytes through, so the probe, the demo's curl and the tests meet vLLM's own TLS. Each backend
   names its pod, so the stand-in's ``GET /_standin/metrics/{namespace}/{pod}`` (what Prometheus
   scrapes for the pod) is that vLLM's own ``/metrics``;
4. a container whose process ends shows terminated with its exit code and not Ready, and is started
   again after a back-off (10 s, doubling to 160 s) with its restart count up; a failing fetcher
   likewise; a renewed ``<order>-tls`` is written into the Secret volume the kubelet's way
   (``PodRunner.update_secret``), and vLLM's ``--enable-ssl-refresh`` loads it;
5. a deleted pod (gone, or a deletion timestamp) stops its processes; the order's route is dropped
   once it has neither pods nor a Deployment.

At most ``--max-pods`` pods run at once (each vLLM takes about 4 GiB here); the others stay not Ready
and say why. Needs root (``unshare --mount``, see ``runner``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import logging
import re
import signal
import ssl
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from devtools.http_json import send_json
from devtools.podrunner import adoption, images
from devtools.podrunner.adoption import Report, State
from devtools.podrunner.launch import ImageRun, LaunchError, PodObjects, listen_port, plan_launch
from devtools.podrunner.runner import InitContainerError, PodRunner, free_port
from shared import names, runtime_images

log = logging.getLogger("podrunner.plane")
BACKOFF_START, BACKOFF_MAX = 10.0, 160.0
Obj = dict[str, Any]


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _decoded(data: Mapping[str, Any] | None) -> dict[str, str]:
    return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (data or {}).items()}


UNDECIDED_SECONDS = 60.0  # how long ``adopts`` says "not decided yet" for one pod


class Routes:
    """The orders the runner serves, pushed to the stand-in's control port: order -> {pod uid: (the
    pod's name, the ready process's ``127.0.0.1:port`` or None while it is not ready)}. Each backend
    is pushed with its pod's name (``{"address": ..., "pod": ...}``): the stand-in serves that pod's
    metrics from the process."""

    def __init__(self, control_url: str) -> None:
        self.control_url = control_url.rstrip("/")
        self._lock = threading.Lock()
        self._table: dict[tuple[str, str], dict[str, tuple[str, str | None]]] = {}
        self._pushed: set[tuple[str, str]] = set()

    def claimed(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._table)

    def set(self, order: tuple[str, str], uid: str | None, backend: str | None, *, pod: str = "") -> None:
        """Claim ``order`` (``uid`` None), or set the backend of pod ``uid`` (named ``pod``); pushed
        when it changes."""
        with self._lock:
            pods = self._table.setdefault(order, {})
            before = _backends(pods)
            new = order not in self._pushed
            if uid is not None:
                pods[uid] = (pod, backend)
            after = _backends(pods)
            if new or before != after:
                self._push("PUT", order, {"backends": after})
                self._pushed.add(order)

    def forget(self, order: tuple[str, str], uid: str) -> None:
        with self._lock:
            pods = self._table.get(order)
            if pods is not None and pods.pop(uid, (None, None))[1]:
                self._push("PUT", order, {"backends": _backends(pods)})

    def drop(self, order: tuple[str, str]) -> None:
        with self._lock:
            self._table.pop(order, None)
            self._pushed.discard(order)
            self._push("DELETE", order, None)

    def _push(self, method: str, order: tuple[str, str], body: Obj | None) -> None:
        url = f"{self.control_url}/_standin/routes/{order[0]}/{order[1]}"
        httpx.request(method, url, json=body, timeout=10).raise_for_status()


def _backends(pods: Mapping[str, tuple[str, str | None]]) -> list[Obj | str]:
    """The ready backends, by address: each with its pod's name (a bare address when none is known)."""
    ready = sorted((backend, pod) for pod, backend in pods.values() if backend)
    return [{"address": backend, "pod": pod} if pod else backend for backend, pod in ready]


class PodWorker(threading.Thread):
    """One adopted pod, run as its kubelet would (module doc, steps 2-4)."""

    def __init__(self, plane: PlaneRunner, pod: Obj, objects: PodObjects) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}-{meta['name']}", daemon=True)
        self.plane, self.pod = plane, pod
        self.uid: str = meta["uid"]
        self.pod_name: str = meta["name"]
        self.order = (meta["namespace"], names.order_of(pod) or "")
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        spec = pod["spec"]
        claims = {
            v["persistentVolumeClaim"]["claimName"]: plane.state / "claims" / meta["namespace"] / v["persistentVolumeClaim"]["claimName"]
            for v in spec.get("volumes") or ()
            if "persistentVolumeClaim" in v
        }  # fmt: skip
        workdir = plane.state / "pods" / meta["namespace"] / f"{meta['name']}-{self.uid[:8]}"
        self.runner = PodRunner(spec, objects, plane.images, workdir=workdir, claims=claims)
        self.init: dict[str, State] = {}
        self.states: dict[str, State] = {}
        self.last: dict[str, State] = {}
        self.restarts: dict[str, int] = {}
        self.ready: set[str] = set()
        self.message = ""
        self.secret_versions: dict[str, str] = {}

    # -- status ------------------------------------------------------------------------------

    def report(self) -> None:
        r = Report(self.init, self.states, frozenset(self.ready), self.restarts, self.last, self.message)
        meta = self.pod["metadata"]
        try:
            live = self.plane.api.sanitize_for_serialization(
                self.plane.core.read_namespaced_pod(meta["name"], meta["namespace"])
            )
            self.plane.core.patch_namespaced_pod_status(
                meta["name"], meta["namespace"], adoption.status_patch(live, r, now())
            )
        except ApiException as e:
            if e.status != 404:
                log.warning("%s: status patch failed: %s", self.name, e.reason)

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:  # a pod that cannot run here shows why, as a kubelet's event would
            log.exception("%s: failed", self.name)
            self.message = f"the plane runner could not run the pod: {e}"
            self.report()
        finally:
            self.runner.stop(grace=5)
            self.plane.routes.forget(self.order, self.uid)

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped; True when stopped."""
        return self.stopping.wait(seconds)

    def _mount(self) -> bool:
        """Wait while a Secret or ConfigMap of the pod's volumes is missing (``<order>-tls`` before
        cert-manager issued it), as a kubelet does; False when stopped meanwhile."""
        while not self.stopping.is_set():
            try:
                self.runner.prepare()
                return True
            except LaunchError as e:
                if self.message != f"waiting for the pod's volumes: {e}":
                    self.message = f"waiting for the pod's volumes: {e}"
                    self.report()
                if self._wait(2.0):
                    return False
                self.runner.objects = self.plane.objects(self.pod)
        return False

    def _run(self) -> None:
        self._settle()
        if not self._mount():
            return
        backoff = BACKOFF_START
        while not self.stopping.is_set():  # the init containers, again after a failure
            first = next(iter(self.pod["spec"].get("initContainers") or ()), None)
            if first is not None:
                self.init[first["name"]] = State("running", at=now())
            self.message = "the model fetcher is downloading the model"
            self.report()
            try:
                self.runner.run_init(timeout=900)
            except InitContainerError as e:
                if self.stopping.is_set():
                    return
                self.init[e.name] = State("terminated", "Error", e.args[0][-400:], e.exit_code or 1, now())
                self.restarts[e.name] = self.restarts.get(e.name, 0) + 1
                self.message = f"init container {e.name} failed; retried in {backoff:.0f} s"
                self.report()
                if self._wait(backoff):
                    return
                backoff = min(2 * backoff, BACKOFF_MAX)
                continue
            break
        for c in self.pod["spec"].get("initContainers") or ():
            self.init[c["name"]] = State("terminated", "Completed", exit_code=0, at=now())
        with self._lock:
            if self.stopping.is_set():
                return
            self.runner.start()
        for c in self.pod["spec"]["containers"]:
            self.states[c["name"]] = State("running", at=now())
        self.message = "vLLM is loading the model"
        self.report()
        self._serve()

    def _settle(self) -> None:
        """Wait (up to 60 s) for KWOK's pod-ready stage, so that its status does not land over ours."""
        meta = self.pod["metadata"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.stopping.is_set():
            with contextlib.suppress(ApiException):
                live = self.plane.core.read_namespaced_pod(meta["name"], meta["namespace"])
                if live.status and live.status.phase and live.status.phase != "Pending":
                    return
            self._wait(0.5)

    def _serve(self) -> None:
        backoff: dict[str, float] = {}
        next_secret_check = 0.0
        while not self.stopping.is_set():
            changed = False
            for name, st in self.runner.statuses().items():
                if not st.running:
                    ended = State(
                        "terminated",
                        "Error" if st.exit_code else "Completed",
                        exit_code=st.exit_code,
                        at=now(),
                    )
                    self.last[name], changed = ended, True
                    self.ready.discard(name)
                    self.states[name] = State("waiting", "CrashLoopBackOff", f"back-off restarting {name}")
                    self.plane.routes.set(self.order, self.uid, None, pod=self.pod_name)
                    self.report()
                    wait = backoff.get(name, BACKOFF_START)
                    backoff[name] = min(2 * wait, BACKOFF_MAX)
                    log.info(
                        "%s: container %s exited with %s; restarting in %.0f s",
                        self.name,
                        name,
                        st.exit_code,
                        wait,
                    )
                    if self._wait(wait):
                        return
                    with self._lock:
                        if self.stopping.is_set():
                            return
                        self.runner.restart(name)
                    self.restarts[name] = self.restarts.get(name, 0) + 1
                    self.states[name] = State("running", at=now())
                    changed = True
                    continue
                ok = self._healthy(name)
                if ok != (name in self.ready):
                    (self.ready.add if ok else self.ready.discard)(name)
                    changed = True
            if changed:
                ready = {c["name"] for c in self.pod["spec"]["containers"]} <= self.ready
                self.message = "" if ready else "vLLM is not ready"
                backend = self._backend() if ready else None
                self.plane.routes.set(self.order, self.uid, backend, pod=self.pod_name)
                self.report()
                log.info("%s: ready=%s backend=%s", self.name, ready, backend)
            if time.monotonic() >= next_secret_check:
                self._refresh_secrets()
                next_secret_check = time.monotonic() + 5
            self._wait(1.0)

    def _port(self, name: str) -> int | None:
        launch = self.runner.launches.get(name)
        return listen_port(launch) if launch is not None else None

    def _backend(self) -> str | None:
        port = self._port(adoption.RUNTIME_CONTAINER)
        return f"127.0.0.1:{port}" if port else None

    def _healthy(self, name: str) -> bool:
        """The rendered readiness probe (``httpGet``) against the process's own port."""
        (container,) = [c for c in self.pod["spec"]["containers"] if c["name"] == name]
        probe = (container.get("readinessProbe") or {}).get("httpGet")
        port = self._port(name)
        if not probe or port is None:
            return True
        scheme = str(probe.get("scheme", "HTTP")).lower()
        try:
            resp = httpx.get(f"{scheme}://127.0.0.1:{port}{probe.get('path', '/')}", verify=False, timeout=2)
        except (httpx.HTTPError, ssl.SSLError, OSError):
            return False
        return 200 <= resp.status_code < 400

    def _refresh_secrets(self) -> None:
        ns = self.pod["metadata"]["namespace"]
        for v in self.pod["spec"].get("volumes") or ():
            name = (v.get("secret") or {}).get("secretName")
            if not name:
                continue
            with contextlib.suppress(ApiException):
                secret = self.plane.core.read_namespaced_secret(name, ns)
                version = str(secret.metadata.resource_version)
                if self.secret_versions.setdefault(name, version) != version:
                    self.secret_versions[name] = version
                    self.runner.update_secret(name, _decoded(secret.data))
                    log.info("%s: Secret %s changed; volume rewritten", self.name, name)

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            self.runner.stop(grace=5)


class PlaneRunner:
    """The watch over the plane's pods (module doc)."""

    def __init__(self, api: k8s.ApiClient, routes: Routes, state: Path, images: Mapping[str, ImageRun],
                 *, max_pods: int = 2, max_bytes: int = adoption.MAX_MODEL_BYTES) -> None:  # fmt: skip
        self.api: Any = api  # the client is untyped: objects are read as plain JSON (sanitized)
        self.core: Any = k8s.CoreV1Api(api)
        self.apps: Any = k8s.AppsV1Api(api)
        self.routes, self.state, self.images = routes, state, images
        self.max_pods, self.max_bytes = max_pods, max_bytes
        self.image = runtime_images.pinned().image
        self.workers: dict[str, PodWorker] = {}
        self.decided: dict[str, bool] = {}  # pod uid -> adopted
        self.undecided_since: dict[str, float] = {}  # pod uid -> when ``decide`` first could not tell
        self.lock = threading.RLock()  # the sync and the stand-in's questions

    def objects(self, pod: Obj) -> PodObjects:
        """What the kubelet would read for ``pod``: its Secrets and ConfigMaps (those that exist)."""
        meta, spec = pod["metadata"], pod["spec"]
        secrets: set[str] = set()
        maps: set[str] = set()
        for v in spec.get("volumes") or ():
            if "secret" in v:
                secrets.add(v["secret"]["secretName"])
            if "configMap" in v:
                maps.add(v["configMap"]["name"])
        for c in [*(spec.get("initContainers") or ()), *spec["containers"]]:
            for e in c.get("env") or ():
                ref = e.get("valueFrom") or {}
                if "secretKeyRef" in ref:
                    secrets.add(ref["secretKeyRef"]["name"])
                if "configMapKeyRef" in ref:
                    maps.add(ref["configMapKeyRef"]["name"])
        ns = meta["namespace"]
        got_secrets, got_maps = {}, {}
        for name in secrets:
            with contextlib.suppress(ApiException):
                got_secrets[name] = _decoded(self.core.read_namespaced_secret(name, ns).data)
        for name in maps:
            with contextlib.suppress(ApiException):
                got_maps[name] = dict(self.core.read_namespaced_config_map(name, ns).data or {})
        return PodObjects(
            name=meta["name"], namespace=ns, uid=meta["uid"], node_name=spec.get("nodeName") or "localhost",
            labels=dict(meta.get("labels") or {}), secrets=got_secrets, config_maps=got_maps,
        )  # fmt: skip

    def weighs(self, pod: Obj, objects: PodObjects) -> int | None:
        """The bytes the pod's fetcher would download, from the Hub its ``HF_ENDPOINT`` names."""
        (fetcher,) = [c for c in pod["spec"]["initContainers"] if c["name"] == names.FETCHER_CONTAINER]
        launch = plan_launch(fetcher, objects, self.images, taken=lambda _: False, free=free_port)
        download = adoption.download_of(launch.argv)
        endpoint = launch.env.get("HF_ENDPOINT", "").rstrip("/")
        if download is None or not endpoint:
            return None
        token = launch.env.get("HF_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        url = f"{endpoint}/api/models/{download.repo}/revision/{download.revision}"
        resp = httpx.get(url, params={"blobs": "true"}, headers=headers, timeout=10)
        resp.raise_for_status()
        return adoption.selected_bytes(resp.json().get("siblings") or [], download.patterns)

    def decide(self, pod: Obj) -> bool | None:
        """Whether the runner adopts ``pod``; None: not yet known (a Secret missing, the Hub down)."""
        if not adoption.runs_here(pod["spec"], self.image):
            return False
        objects = self.objects(pod)
        try:
            size = self.weighs(pod, objects)
        except (LaunchError, httpx.HTTPError) as e:
            log.info(
                "pod %s/%s: not decided yet: %s", pod["metadata"]["namespace"], pod["metadata"]["name"], e
            )
            return None
        return size is not None and size <= self.max_bytes

    def verdict(self, pod: Obj) -> bool:
        """``decide`` once per pod; an adopted pod's order is claimed at the stand-in first."""
        uid = pod["metadata"]["uid"]
        if uid not in self.decided:
            verdict = self.decide(pod)
            if verdict is None:
                return False
            self.decided[uid] = verdict
            if verdict:
                order = (pod["metadata"]["namespace"], names.order_of(pod) or "")
                self.routes.set(order, None, None)
                log.info("pod %s/%s: served by a real vLLM", *order)
        return self.decided[uid]

    def adopts(self, namespace: str, order: str) -> bool | None:
        """Asked by the stand-in before it answers for an order nobody routed (``GET /adopts/...``):
        whether a pod of the order is one the runner serves; claimed before the answer. None while a
        pod of the vLLM image is not decided yet (its Secrets or the Hub not read yet), for at most
        ``UNDECIDED_SECONDS``: the stand-in then answers nothing rather than pretend to be a runtime
        that may be about to start (a KWOK pod is Ready at once, and the controller's first probe
        answered by the stand-in made a tiny-model order Ready before its vLLM ran)."""
        with self.lock:
            listed = self.core.list_namespaced_pod(namespace, label_selector=f"{names.LABEL_ORDER}={order}")
            pods = [self.api.sanitize_for_serialization(i) for i in listed.items]
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            verdicts = [self.verdict(p) for p in live]  # every pod decided (and claimed)
            if any(verdicts):
                return True
            now = time.monotonic()
            for p in live:
                uid = p["metadata"]["uid"]
                if uid in self.decided or not adoption.runs_here(p["spec"], self.image):
                    continue
                if now - self.undecided_since.setdefault(uid, now) < UNDECIDED_SECONDS:
                    return None
            return False

    def sync_once(self) -> None:
        with self.lock:
            self._sync()

    def _sync(self) -> None:
        listed = self.core.list_pod_for_all_namespaces(label_selector=names.LABEL_ORDER)
        pods = {
            p["metadata"]["uid"]: p for p in (self.api.sanitize_for_serialization(i) for i in listed.items)
        }
        for uid, worker in list(self.workers.items()):
            pod = pods.get(uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                log.info("%s: deleted; stopping its processes", worker.name)
                # Out of the route at once, as a terminating pod leaves its Service's endpoints
                # before its processes stop: a connection meanwhile must not reach a server that is
                # shutting down (an order back at zero goes to the activator instead).
                self.routes.forget(worker.order, worker.uid)
                threading.Thread(target=worker.stop, daemon=True).start()
                del self.workers[uid]
        for uid, pod in pods.items():
            if (
                uid in self.workers
                or pod["metadata"].get("deletionTimestamp")
                or self.decided.get(uid) is False
            ):
                continue
            if not self.verdict(pod):
                continue
            if len(self.workers) >= self.max_pods:
                continue  # waits for a slot; not Ready meanwhile (KWOK's stage aside)
            worker = PodWorker(self, pod, self.objects(pod))
            self.workers[uid] = worker
            worker.start()
        live_orders = {(p["metadata"]["namespace"], names.order_of(p) or "") for p in pods.values()}
        for order in self.routes.claimed():
            if order not in live_orders and not self._deployment_exists(order):
                log.info("order %s/%s: gone; route dropped", *order)
                self.routes.drop(order)
        self.decided = {u: v for u, v in self.decided.items() if u in pods}

    def _deployment_exists(self, order: tuple[str, str]) -> bool:
        try:
            self.apps.read_namespaced_deployment(names.workload(order[1]), order[0])
        except ApiException as e:
            return bool(e.status != 404)
        return True

    def run(self, stop: threading.Event, period: float = 1.0) -> None:
        while not stop.is_set():
            try:
                self.sync_once()
            except (ApiException, httpx.HTTPError, OSError) as e:
                log.warning("sync failed: %s", e)
            stop.wait(period)
        for worker in self.workers.values():
            worker.stop()
        for worker in self.workers.values():
            worker.join(timeout=30)


class _Questions(BaseHTTPRequestHandler):
    """``GET /adopts/{namespace}/{order}`` -> ``{"adopted": true | false | null}`` (null: not decided yet; ``PlaneRunner.adopts``)."""

    server: _QuestionServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        m = re.fullmatch(r"/adopts/([a-z0-9-]{1,63})/([a-z0-9-]{1,63})", self.path)
        doc: dict[str, object]
        if m is None:
            code, doc = 404, {"error": "GET /adopts/{namespace}/{order}"}
        else:
            try:
                code, doc = 200, {"adopted": self.server.plane.adopts(m.group(1), m.group(2))}
            except (ApiException, httpx.HTTPError, OSError) as e:
                code, doc = 503, {"error": str(e)}
        send_json(self, code, doc)


class _QuestionServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, plane: PlaneRunner) -> None:
        super().__init__(("127.0.0.1", 0), _Questions)
        self.plane = plane


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.podrunner", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--standin-control", required=True, help="the runtime stand-in's control URL")
    parser.add_argument("--state", required=True, type=Path, help="work directory (pods, claims, logs)")
    parser.add_argument("--max-pods", type=int, default=2)
    parser.add_argument("--max-model-bytes", type=int, default=adoption.MAX_MODEL_BYTES)
    parser.add_argument("--kv-cache-gib", type=int, default=1)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health check otherwise
    new_client: Any = k8s_config.new_client_from_config
    api = new_client(config_file=args.kubeconfig)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    plane = PlaneRunner(api, Routes(args.standin_control), args.state, images.pinned_vllm(kv_cache_gib=args.kv_cache_gib),
                        max_pods=args.max_pods, max_bytes=args.max_model_bytes)  # fmt: skip
    questions = _QuestionServer(plane)
    threading.Thread(target=questions.serve_forever, name="questions", daemon=True).start()
    url = f"http://127.0.0.1:{questions.server_address[1]}"
    adopter = f"{args.standin_control.rstrip('/')}/_standin/adopter"
    httpx.put(adopter, json={"url": url}, timeout=10).raise_for_status()
    log.info(
        "plane runner up: pods of the pinned %s with at most %d bytes of files; the stand-in asks %s",
        plane.image, plane.max_bytes, url,
    )  # fmt: skip
    try:
        plane.run(stop)
    finally:
        with contextlib.suppress(httpx.HTTPError):
            httpx.delete(adopter, timeout=10)
        questions.shutdown()
    return 0
