"""Module settings: the ConfigMap the controller reads at start, plus environment defaults.

Pure: ``parse_settings(data, env)`` turns the ConfigMap's ``data`` and the process environment
into a frozen ``Settings``. Unknown keys are ignored; a bad value raises ``SettingsError`` naming
the key, so a typo fails the start rather than a reconcile.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from controller.config.cert_lifetime import lifetime_problem
from shared.api.scheduling import Toleration

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
DEFAULT_PROMETHEUS_SERVER_ADDRESS = "http://prometheus.d8-monitoring.svc:9090"
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")  # fullmatch
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany")


class SettingsError(ValueError):
    """A module setting has a value the controller cannot use."""


class Settings(BaseModel):
    """Module settings. Keys of the ConfigMap are the camelCase field names."""

    model_config = ConfigDict(frozen=True)

    catalog_enabled: bool = False
    hf_endpoint: str = DEFAULT_HF_ENDPOINT
    probe_period_seconds: float = 30.0
    probe_failure_threshold: int = 3
    probe_timeout_seconds: float = 5.0
    # The probe connects to this host:port instead of the endpoint's host, still sending the
    # endpoint's name as SNI and verifying the certificate for it. For a runtime stand-in or a
    # port-forward; empty in production.
    probe_address_override: str = ""
    # The controller scrapes the model fetcher's download progress at this host:port instead of the
    # pod's IP and port 9090 (controller.live.progress_book). For a local plane; empty in production.
    model_fetcher_metrics_address_override: str = ""
    # PEM bundle the probe verifies endpoint certificates against (the platform CA).
    platform_ca_file: str = ""
    external_domain_template: str = "{name}.{namespace}.inference.example.com"
    ingress_class_name: str = "nginx"
    endpoint_issuer: str = "inference-endpoints"
    endpoint_issuer_kind: str = "ClusterIssuer"
    model_storage_class: str = ""
    # ReadWriteOnce: every block-storage class has it, but the volume attaches to one node at a time,
    # so the Deployment is replaced with Recreate and replicas share the node. ReadWriteMany (NFS,
    # CephFS...) lets replicas spread and the Deployment roll (docs/admin-guide.md, "Model volumes").
    model_volume_access_mode: str = "ReadWriteOnce"
    # Tolerations and node selector of every runtime pod (GPU nodes are usually tainted); a class
    # adds its own (`spec.placement.tolerations` / `nodeSelector`). JSON in the ConfigMap.
    gpu_node_tolerations: tuple[Toleration, ...] = ()
    gpu_node_selector: dict[str, str] = {}
    # The endpoint Certificate's lifetime and when cert-manager renews it (Go durations).
    endpoint_certificate_duration: str = "2160h"
    endpoint_certificate_renew_before: str = "720h"
    # Throughputs the startup probe and the progress deadline are sized with (controller/render/timing.py).
    model_load_mib_per_second: float = 200.0
    model_download_mib_per_second: float = 50.0
    # Defaults to the recipe's image, which ships the `hf` CLI and python3 (the progress wrapper).
    model_fetcher_image: str = ""
    claim_grace_seconds: float = 60.0
    scale_up_grace_seconds: float = 120.0
    resync_seconds: float = 300.0
    # Off by default: an order's model revision is the commit sha fixed at first resolution. On, a
    # new commit of the order's branch rolls out as a replan (replanCount + 1, an Event).
    follow_model_revisions: bool = False
    # The Prometheus every order's KEDA ScaledObject asks for the runtime's load (its
    # ``serverAddress``): it must scrape the runtimes' /metrics (docs/admin-guide.md, "Autoscaling").
    prometheus_server_address: str = DEFAULT_PROMETHEUS_SERVER_ADDRESS
    # Hex SHA-256 of the token Prometheus presents on the runtimes' GET /metrics (the token guard,
    # controller/render/token_guard.py). Empty: no scrape credential, /metrics only with the order's token.
    metrics_scrape_token_sha256: str = ""


_KEYS: dict[str, str] = {
    "catalogEnabled": "catalog_enabled",
    "hfEndpoint": "hf_endpoint",
    "probePeriodSeconds": "probe_period_seconds",
    "probeFailureThreshold": "probe_failure_threshold",
    "probeTimeoutSeconds": "probe_timeout_seconds",
    "probeAddressOverride": "probe_address_override",
    "modelFetcherMetricsAddressOverride": "model_fetcher_metrics_address_override",
    "platformCAFile": "platform_ca_file",
    "externalDomainTemplate": "external_domain_template",
    "ingressClassName": "ingress_class_name",
    "endpointIssuer": "endpoint_issuer",
    "endpointIssuerKind": "endpoint_issuer_kind",
    "modelStorageClass": "model_storage_class",
    "modelVolumeAccessMode": "model_volume_access_mode",
    "gpuNodeTolerations": "gpu_node_tolerations",
    "gpuNodeSelector": "gpu_node_selector",
    "endpointCertificateDuration": "endpoint_certificate_duration",
    "endpointCertificateRenewBefore": "endpoint_certificate_renew_before",
    "modelLoadMiBPerSecond": "model_load_mib_per_second",
    "modelDownloadMiBPerSecond": "model_download_mib_per_second",
    "modelFetcherImage": "model_fetcher_image",
    "claimGraceSeconds": "claim_grace_seconds",
    "scaleUpGraceSeconds": "scale_up_grace_seconds",
    "resyncSeconds": "resync_seconds",
    "followModelRevisions": "follow_model_revisions",
    "prometheusServerAddress": "prometheus_server_address",
    "metricsScrapeTokenSHA256": "metrics_scrape_token_sha256",
}

_BOOL = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def parse_settings(data: Mapping[str, str] | None, env: Mapping[str, str]) -> Settings:
    """Settings from the ConfigMap ``data`` (may be None) over environment defaults.

    ``HF_ENDPOINT`` in the environment is the default Hub endpoint, as huggingface_hub does; the
    ConfigMap's ``hfEndpoint`` wins when set.
    """
    values: dict[str, object] = {}
    if env.get("HF_ENDPOINT"):
        values["hf_endpoint"] = env["HF_ENDPOINT"].rstrip("/")
    for key, raw in (data or {}).items():
        field = _KEYS.get(key)
        if field is None or raw == "":
            continue
        annotation = Settings.model_fields[field].annotation
        if field in _JSON_FIELDS:
            values[field] = _json_value(key, raw)
            continue
        try:
            if annotation is bool:
                values[field] = _BOOL[raw.strip().lower()]
            elif annotation is int:
                values[field] = int(raw)
            elif annotation is float:
                values[field] = float(raw)
            else:
                values[field] = raw.strip()
        except (KeyError, ValueError) as e:
            raise SettingsError(
                f"module setting `{key}`: {raw!r} is not a valid {getattr(annotation, '__name__', annotation)}"
            ) from e
    try:
        settings = Settings.model_validate(values)
    except ValidationError as e:
        first = e.errors()[0]
        key = next((k for k, f in _KEYS.items() if first["loc"] and f == first["loc"][0]), "?")
        raise SettingsError(f"module setting `{key}`: {first['msg']}") from e
    if settings.model_volume_access_mode not in ACCESS_MODES:
        raise SettingsError(
            f"module setting `modelVolumeAccessMode`: must be one of {', '.join(ACCESS_MODES)}, "
            f"not {settings.model_volume_access_mode!r}"
        )
    if not settings.prometheus_server_address.startswith(("http://", "https://")):
        raise SettingsError(
            "module setting `prometheusServerAddress`: must be an http:// or https:// URL, "
            f"not {settings.prometheus_server_address!r}"
        )
    digest = settings.metrics_scrape_token_sha256
    if digest:
        if not _SHA256_HEX.fullmatch(digest):
            raise SettingsError(
                "module setting `metricsScrapeTokenSHA256`: must be the 64 hex digits of a SHA-256 "
                '(`printf %s "$TOKEN" | sha256sum`), not the token itself or anything else'
            )
        if digest.lower() == EMPTY_SHA256:
            raise SettingsError("module setting `metricsScrapeTokenSHA256`: is the SHA-256 of an empty token")
        settings = settings.model_copy(update={"metrics_scrape_token_sha256": digest.lower()})
    if settings.probe_failure_threshold < 1:
        raise SettingsError("module setting `probeFailureThreshold`: must be at least 1")
    problem = lifetime_problem(
        settings.endpoint_certificate_duration, settings.endpoint_certificate_renew_before
    )
    if problem is not None:
        raise SettingsError(f"module setting {problem}")
    return settings


_JSON_FIELDS = frozenset({"gpu_node_tolerations", "gpu_node_selector"})


def _json_value(key: str, raw: str) -> Any:
    """A setting written as JSON in the ConfigMap (a list of tolerations, a map of labels)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise SettingsError(f"module setting `{key}`: {raw!r} is not valid JSON ({e.msg})") from e
