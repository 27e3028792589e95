"""Module settings: the ConfigMap the controller reads at start, plus environment defaults.

Pure: ``parse_settings(data, env)`` turns the ConfigMap's ``data`` and the process environment
into a frozen ``Settings``. Unknown keys are ignored; a bad value raises ``SettingsError`` naming
the key, so a typo fails the start rather than a reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

DEFAULT_HF_ENDPOINT = "https://huggingface.co"


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
    # PEM bundle the probe verifies endpoint certificates against (the platform CA).
    platform_ca_file: str = ""
    external_domain_template: str = "{name}.{namespace}.inference.example.com"
    ingress_class_name: str = "nginx"
    endpoint_issuer: str = "inference-endpoints"
    endpoint_issuer_kind: str = "ClusterIssuer"
    model_storage_class: str = ""
    model_fetcher_image: str = ""  # defaults to the recipe's image, which ships the `hf` CLI
    claim_grace_seconds: float = 60.0
    scale_up_grace_seconds: float = 120.0
    resync_seconds: float = 300.0
    # Off by default: an order's model revision is the commit sha fixed at first resolution. On, a
    # new commit of the order's branch rolls out as a replan (replanCount + 1, an Event).
    follow_model_revisions: bool = False


_KEYS: dict[str, str] = {
    "catalogEnabled": "catalog_enabled",
    "hfEndpoint": "hf_endpoint",
    "probePeriodSeconds": "probe_period_seconds",
    "probeFailureThreshold": "probe_failure_threshold",
    "probeTimeoutSeconds": "probe_timeout_seconds",
    "probeAddressOverride": "probe_address_override",
    "platformCAFile": "platform_ca_file",
    "externalDomainTemplate": "external_domain_template",
    "ingressClassName": "ingress_class_name",
    "endpointIssuer": "endpoint_issuer",
    "endpointIssuerKind": "endpoint_issuer_kind",
    "modelStorageClass": "model_storage_class",
    "modelFetcherImage": "model_fetcher_image",
    "claimGraceSeconds": "claim_grace_seconds",
    "scaleUpGraceSeconds": "scale_up_grace_seconds",
    "resyncSeconds": "resync_seconds",
    "followModelRevisions": "follow_model_revisions",
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
    settings = Settings.model_validate(values)
    if settings.probe_failure_threshold < 1:
        raise SettingsError("module setting `probeFailureThreshold`: must be at least 1")
    return settings
