"""The pure parts of the plane's metrics add-ons: Prometheus's configuration (devtools/cluster/components/
prometheus.py ``config``), the objects registering KEDA's metrics adapter and the three KEDA command lines
(devtools/cluster/components/keda.py), and the choice of the aggregation address (devtools/cluster/netaddr.py).
Nothing is started; promtool, when built, only checks files."""

from __future__ import annotations

import base64
import json
import pathlib
import re
import socket
import subprocess
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from devtools.cluster import config as cluster_config
from devtools.cluster import netaddr
from devtools.cluster.components import keda, prometheus
from devtools.cluster.components.base import Plane
from devtools.cluster.tuning import tuning
from shared.names import LABEL_ORDER
from standins.runtime.server import _METRICS as STANDIN_METRICS_PATH

TARGET = "10.1.2.3:18080"
ORDER_META = "__meta_kubernetes_pod_label_ai_deckhouse_io_inference_service"
PROMTOOL = prometheus.bin_dir() / "promtool"


def _job(kubeconfig: pathlib.Path) -> dict[str, Any]:
    cfg = yaml.safe_load(
        yaml.safe_dump(prometheus.config(kubeconfig=kubeconfig, target=TARGET), sort_keys=False)
    )
    (job,) = cfg["scrape_configs"]
    assert isinstance(job, dict)
    return job


# --- Prometheus's relabelling, as Prometheus does it (model/relabel/relabel.go) -------------------------


def _expand(template: str, m: re.Match[str]) -> str:
    # Go's Regexp.Expand: $1, ${1}, $name, ${name}; $$ is a literal $.
    def one(g: re.Match[str]) -> str:
        if g[0] == "$$":
            return "$"
        ref = g[1] or g[2]
        try:
            return m.group(int(ref) if ref.isdigit() else ref) or ""
        except IndexError:  # no such group: empty, as in Go
            return ""

    return re.sub(r"\$\$|\$\{(\w+)\}|\$(\w+)", one, template)


def relabel(labels: Mapping[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """The labels after ``rules`` (actions replace and keep), or None when the target is dropped."""
    out = dict(labels)
    for rule in rules:
        value = rule.get("separator", ";").join(out.get(s, "") for s in rule.get("source_labels", []))
        m = re.fullmatch(rule.get("regex", "(.*)"), value)
        action = rule.get("action", "replace")
        if action == "keep":
            if m is None:
                return None
        elif action == "replace":
            if m is None:
                continue
            new = _expand(rule.get("replacement", "$1"), m)
            if new:
                out[rule["target_label"]] = new
            else:
                out.pop(rule["target_label"], None)
        else:
            raise AssertionError(f"the evaluator knows no action {action!r}")
    return out


def _discovered(namespace: str, pod: str, order: str | None) -> dict[str, str]:
    labels = {
        "__address__": "10.244.0.7:8000",  # what kubernetes_sd sets: the pod IP, unreachable on KWOK
        "__metrics_path__": "/metrics",
        "__scheme__": "http",
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_pod_name": pod,
        "__meta_kubernetes_pod_label_app": "x",
    }
    if order is not None:
        labels[ORDER_META] = order
    return labels


def test_the_order_label_is_sanitised_as_prometheus_does() -> None:
    assert LABEL_ORDER == "ai.deckhouse.io/inference-service"  # ORDER_META below is spelt from it
    assert prometheus.label_meta(LABEL_ORDER) == ORDER_META
    assert prometheus.label_meta("a.b/c-d_E9") == "__meta_kubernetes_pod_label_a_b_c_d_E9"


def test_without_a_target_there_is_no_job(tmp_path: pathlib.Path) -> None:
    cfg = yaml.safe_load(yaml.safe_dump(prometheus.config(kubeconfig=tmp_path / "kc", target=None)))
    assert cfg["scrape_configs"] == []
    assert cfg["global"]["scrape_interval"] == prometheus.SCRAPE_INTERVAL


def test_the_job_discovers_the_planes_pods_through_its_kubeconfig(tmp_path: pathlib.Path) -> None:
    job = _job(tmp_path / "kubeconfig")
    assert job["job_name"] == "inference-runtime"
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "kubeconfig_file": str(tmp_path / "kubeconfig")}]
    keeps = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert keeps == [{"source_labels": [ORDER_META], "regex": ".+", "action": "keep"}]


def test_the_relabelling_scrapes_an_order_pod_at_the_standin(tmp_path: pathlib.Path) -> None:
    rules = _job(tmp_path / "kc")["relabel_configs"]
    out = relabel(_discovered("team-a", "llama-7b-0.runtime", "llama-7b"), rules)
    assert out is not None
    assert out["__address__"] == TARGET
    assert out["__metrics_path__"] == "/_standin/metrics/team-a/llama-7b-0.runtime"
    assert (out["namespace"], out["pod"], out["order"]) == ("team-a", "llama-7b-0.runtime", "llama-7b")
    # ... a path the runtime stand-in answers, naming that pod.
    m = STANDIN_METRICS_PATH.match(out["__metrics_path__"])
    assert m is not None and m.groups() == ("team-a", "llama-7b-0.runtime")


@pytest.mark.parametrize("order", [None, ""])
def test_a_pod_without_the_order_label_is_not_scraped(tmp_path: pathlib.Path, order: str | None) -> None:
    assert (
        relabel(_discovered("kube-system", "coredns-1", order), _job(tmp_path / "kc")["relabel_configs"])
        is None
    )


def test_the_evaluator_follows_prometheus_semantics() -> None:
    # Anchored: "a" does not match "xay"; the separator joins; an empty result removes the label.
    assert relabel({"x": "xay"}, [{"source_labels": ["x"], "regex": "a", "action": "keep"}]) is None
    rule = {"source_labels": ["x", "y"], "separator": "/", "regex": "(.+)/(.+)", "target_label": "z",
            "replacement": "${2}-$1"}  # fmt: skip
    assert relabel({"x": "p", "y": "q"}, [rule]) == {"x": "p", "y": "q", "z": "q-p"}
    assert relabel({"z": "old"}, [{"source_labels": ["none"], "target_label": "z"}]) == {}


def _promtool() -> pathlib.Path:
    if not PROMTOOL.is_file():
        pytest.skip(f"promtool is not built ({PROMTOOL} absent: python -m devtools.cluster build-metrics)")
    return PROMTOOL


def test_promtool_accepts_the_configuration(tmp_path: pathlib.Path) -> None:
    promtool = _promtool()
    f = tmp_path / "prometheus.yml"
    f.write_text(
        yaml.safe_dump(prometheus.config(kubeconfig=tmp_path / "kc", target=TARGET), sort_keys=False)
    )
    res = subprocess.run(
        [str(promtool), "check", "config", str(f)], capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_promtool_relabels_as_the_evaluator_does(tmp_path: pathlib.Path) -> None:
    # ``promtool check service-discovery`` discovers and relabels a job; the pods are given as static
    # targets carrying the meta labels kubernetes_sd would set (no API server is needed).
    promtool = _promtool()
    cfg = prometheus.config(kubeconfig=tmp_path / "kc", target=TARGET)
    job = cfg["scrape_configs"][0]
    del job["kubernetes_sd_configs"]
    pods = [_discovered("team-a", "llama-7b-0", "llama-7b"), _discovered("team-b", "other-0", None)]
    job["static_configs"] = [
        {"targets": [p["__address__"]], "labels": {k: v for k, v in p.items() if k.startswith("__meta_")}}
        for p in pods
    ]
    f = tmp_path / "static.yml"
    f.write_text(yaml.safe_dump(cfg, sort_keys=False))
    res = subprocess.run(
        [str(promtool), "check", "service-discovery", "--timeout=1s", str(f), prometheus.JOB],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    kept = [t["labels"] for t in json.loads(res.stdout) if t["labels"]]
    assert len(kept) == 1
    ours = relabel(pods[0], job["relabel_configs"])
    assert ours is not None
    for name in ("__address__", "__metrics_path__", "namespace", "pod", "order"):
        assert kept[0][name] == ours[name], name
    assert (kept[0]["__address__"], kept[0]["__metrics_path__"]) == (
        TARGET,
        "/_standin/metrics/team-a/llama-7b-0",
    )


def test_the_activator_job_scrapes_its_admin_metrics_keeping_the_series_labels(
    tmp_path: pathlib.Path,
) -> None:
    cfg = prometheus.config(kubeconfig=tmp_path / "kc", target=TARGET, activator="10.1.2.3:19090")
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert set(jobs) == {prometheus.JOB, prometheus.ACTIVATOR_JOB}
    job = jobs[prometheus.ACTIVATOR_JOB]
    assert job["static_configs"] == [{"targets": ["10.1.2.3:19090"]}]
    assert job["metrics_path"] == "/metrics" and job["honor_labels"] is True
    alone = prometheus.config(kubeconfig=tmp_path / "kc", target=None, activator="10.1.2.3:19090")
    assert [j["job_name"] for j in alone["scrape_configs"]] == [prometheus.ACTIVATOR_JOB]


def test_each_target_is_kept_when_the_other_is_set(tmp_path: pathlib.Path) -> None:
    paths = cluster_config.Paths(tmp_path)
    prometheus.write_config(paths, TARGET)
    assert (prometheus.scrape_target(paths), prometheus.activator_target(paths)) == (TARGET, None)
    prometheus.write_config(paths, prometheus.scrape_target(paths), "10.1.2.3:19090")
    assert (prometheus.scrape_target(paths), prometheus.activator_target(paths)) == (TARGET, "10.1.2.3:19090")
    prometheus.write_config(paths, None, prometheus.activator_target(paths))
    assert (prometheus.scrape_target(paths), prometheus.activator_target(paths)) == (None, "10.1.2.3:19090")


def test_promtool_accepts_the_configuration_with_the_activator(tmp_path: pathlib.Path) -> None:
    promtool = _promtool()
    f = tmp_path / "prometheus.yml"
    cfg = prometheus.config(kubeconfig=tmp_path / "kc", target=TARGET, activator="10.1.2.3:19090")
    f.write_text(yaml.safe_dump(cfg, sort_keys=False))
    res = subprocess.run(
        [str(promtool), "check", "config", str(f)], capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0, res.stdout + res.stderr


# --- KEDA -------------------------------------------------------------------------------------------------


@pytest.fixture
def plane(tmp_path: pathlib.Path) -> Plane:
    return Plane(
        cluster_config.Paths(tmp_path),
        tmp_path / "bin",
        etcd_port=23790,
        api_port=16443,
        tuning=tuning("scale"),
    )


def test_the_adapter_is_registered_on_a_selectorless_service_with_our_endpoint_and_ca() -> None:
    service, slice_, apiservice = keda.api_objects(ip="192.168.5.9", port=16450, ca_bundle=b"-----PEM\n")
    assert (service["kind"], slice_["kind"], apiservice["kind"]) == ("Service", "EndpointSlice", "APIService")
    name, ns = service["metadata"]["name"], service["metadata"]["namespace"]
    assert "selector" not in service["spec"]  # the endpoint controller leaves our EndpointSlice alone
    (svc_port,) = service["spec"]["ports"]

    assert slice_["metadata"]["namespace"] == ns
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == name
    assert slice_["addressType"] == "IPv4"
    assert [e["addresses"] for e in slice_["endpoints"]] == [["192.168.5.9"]]
    (ep_port,) = slice_["ports"]
    # The aggregator maps the Service port to the endpoint port by name.
    assert (ep_port["name"], ep_port["port"]) == (svc_port["name"], 16450)
    assert svc_port["targetPort"] == 16450

    assert apiservice["metadata"]["name"] == "v1beta1.external.metrics.k8s.io"
    spec = apiservice["spec"]
    assert (spec["group"], spec["version"]) == ("external.metrics.k8s.io", "v1beta1")
    assert base64.b64decode(spec["caBundle"]) == b"-----PEM\n"
    assert spec["service"] == {"name": name, "namespace": ns, "port": svc_port["port"]}
    assert not spec.get("insecureSkipTLSVerify")


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in argv[1:] if "=" in a)


def test_the_operator_serves_on_loopback_with_our_certificates_and_no_rotation(plane: Plane) -> None:
    argv = keda.operator_argv(plane)
    assert pathlib.Path(argv[0]).name == "keda"
    flags = _flags(argv)
    certs = str(keda.cert_dir(plane.paths))
    assert flags["cert-dir"] == certs
    assert flags["enable-cert-rotation"] == "false"
    assert flags["health-probe-bind-address"] == f"127.0.0.1:{plane.keda_health_port}"
    assert flags["metrics-service-bind-address"] == f"127.0.0.1:{plane.keda_grpc_port}"
    assert flags["kubeconfig"] == str(keda.kubeconfig(plane.paths)) != str(plane.paths.kubeconfig)
    assert flags.get("leader-elect", "false") == "false"


def test_the_adapter_listens_on_the_aggregation_address_and_dials_the_operator(plane: Plane) -> None:
    argv = keda.adapter_argv(plane, "192.168.5.9")
    assert pathlib.Path(argv[0]).name == "keda-adapter"
    flags = _flags(argv)
    certs = keda.cert_dir(plane.paths)
    assert flags["bind-address"] == "192.168.5.9"
    assert flags["secure-port"] == str(plane.keda_adapter_port)
    assert (flags["tls-cert-file"], flags["tls-private-key-file"]) == (
        str(certs / "tls.crt"),
        str(certs / "tls.key"),
    )
    assert flags["cert-dir"] == str(certs)  # its gRPC client certificate for the operator
    operator = _flags(keda.operator_argv(plane))
    assert flags["metrics-service-address"] == operator["metrics-service-bind-address"]
    for k in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"):
        assert flags[k] == str(keda.kubeconfig(plane.paths))


def test_the_webhooks_use_our_certificates_on_their_own_ports(plane: Plane) -> None:
    argv = keda.webhooks_argv(plane)
    assert pathlib.Path(argv[0]).name == "keda-admission-webhooks"
    flags = _flags(argv)
    assert flags["cert-dir"] == str(keda.cert_dir(plane.paths))
    assert flags["port"] == str(plane.keda_webhooks_port)
    assert flags["health-probe-bind-address"] == f"127.0.0.1:{plane.keda_webhooks_health_port}"
    hook = keda.webhook_configuration(
        "webhooks:\n- name: vscaledobject.dev.keda.sh\n  clientConfig:\n"
        "    service: {name: keda-admission-webhooks, namespace: keda, path: /validate-keda-sh-v1alpha1-scaledobject}\n",
        port=plane.keda_webhooks_port,
        ca_bundle=b"CA",
    )["webhooks"][0]["clientConfig"]
    assert hook == {
        "url": f"https://127.0.0.1:{plane.keda_webhooks_port}/validate-keda-sh-v1alpha1-scaledobject",
        "caBundle": base64.b64encode(b"CA").decode(),
    }


def test_the_keda_ports_do_not_collide_with_the_planes(plane: Plane) -> None:
    ports = [plane.etcd_port, plane.api_port, plane.kcm_port, plane.scheduler_port, plane.kwok_port,
             plane.prometheus_port, plane.keda_health_port, plane.keda_grpc_port, plane.keda_adapter_port,
             plane.keda_adapter_metrics_port, plane.keda_webhooks_port, plane.keda_webhooks_health_port]  # fmt: skip
    assert len(set(ports)) == len(ports)


# --- netaddr ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ip", ["192.168.1.20", "10.0.0.1", "172.17.0.2", "203.0.113.254", "8.8.8.8"])
def test_a_routable_ipv4_address_is_usable(ip: str) -> None:
    assert netaddr.usable(ip)


@pytest.mark.parametrize(
    "ip",
    ["127.0.0.1", "127.8.9.10", "169.254.1.1", "0.0.0.0", "224.0.0.251", "::1", "fe80::1", "2001:db8::1",
     "", "localhost", "10.0.0.256", " 10.0.0.1"],
)  # fmt: skip
def test_loopback_link_local_and_non_ipv4_are_not(ip: str) -> None:
    assert not netaddr.usable(ip)


class _FakeSocket:
    """A UDP socket whose route lookup gives ``source`` (or fails with ``error``)."""

    def __init__(self, source: str, error: OSError | None = None) -> None:
        self.source, self.error, self.peer = source, error, ("", 0)

    def __call__(self, *_: Any) -> _FakeSocket:
        return self

    def __enter__(self) -> _FakeSocket:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def connect(self, peer: tuple[str, int]) -> None:
        if self.error is not None:
            raise self.error
        self.peer = peer

    def getsockname(self) -> tuple[str, int]:
        return (self.source, 40000)


@pytest.mark.parametrize(("source", "chosen"), [("192.168.7.3", "192.168.7.3"), ("127.0.0.1", None),
                                                ("169.254.3.4", None), ("0.0.0.0", None)])  # fmt: skip
def test_the_default_routes_source_is_chosen_unless_loopback_or_link_local(
    monkeypatch: pytest.MonkeyPatch, source: str, chosen: str | None
) -> None:
    fake = _FakeSocket(source)
    monkeypatch.setattr(socket, "socket", fake)
    assert netaddr.default_route_ip() == chosen
    assert fake.peer[0] == "192.0.2.1"  # TEST-NET-1: a route is looked up, nothing reaches a real peer


def test_no_default_route_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "socket", _FakeSocket("", OSError(101, "Network is unreachable")))
    assert netaddr.default_route_ip() is None


@pytest.fixture
def no_ip_command(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    ran: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 2, "", "RTNETLINK answers: Operation not permitted")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.delenv("INFERENCE_AGGREGATION_IP", raising=False)
    return ran


def test_the_environment_overrides_the_route(
    monkeypatch: pytest.MonkeyPatch, no_ip_command: list[list[str]]
) -> None:
    monkeypatch.setattr(netaddr, "default_route_ip", lambda: "192.168.7.3")
    monkeypatch.setenv("INFERENCE_AGGREGATION_IP", "10.9.8.7")
    assert netaddr.aggregation_ip() == "10.9.8.7"
    monkeypatch.setenv("INFERENCE_AGGREGATION_IP", "")
    assert netaddr.aggregation_ip() == "192.168.7.3"
    assert no_ip_command == []


@pytest.mark.parametrize("forced", ["127.0.0.1", "169.254.0.9", "::1", "not-an-ip"])
def test_an_unusable_override_is_refused(
    monkeypatch: pytest.MonkeyPatch, no_ip_command: list[list[str]], forced: str
) -> None:
    monkeypatch.setattr(netaddr, "default_route_ip", lambda: "192.168.7.3")
    monkeypatch.setenv("INFERENCE_AGGREGATION_IP", forced)
    with pytest.raises(RuntimeError, match="INFERENCE_AGGREGATION_IP"):
        netaddr.aggregation_ip()


def test_without_a_route_the_fallback_is_used_when_present(
    monkeypatch: pytest.MonkeyPatch, no_ip_command: list[list[str]]
) -> None:
    monkeypatch.setattr(netaddr, "default_route_ip", lambda: None)
    monkeypatch.setattr(netaddr, "_has_address", lambda ip: ip == netaddr.FALLBACK)
    assert netaddr.aggregation_ip() == netaddr.FALLBACK == "203.0.113.254"
    assert no_ip_command == []  # already on lo: nothing added


def test_without_a_route_nor_root_the_error_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, no_ip_command: list[list[str]]
) -> None:
    monkeypatch.setattr(netaddr, "default_route_ip", lambda: None)
    monkeypatch.setattr(netaddr, "_has_address", lambda ip: False)
    with pytest.raises(RuntimeError, match=r"Operation not permitted.*INFERENCE_AGGREGATION_IP"):
        netaddr.aggregation_ip()
    assert no_ip_command == [["ip", "addr", "add", "203.0.113.254/32", "dev", "lo"]]
