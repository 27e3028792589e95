"""The module settings the runtime pod reads: volume access mode, GPU node scheduling, certificate
lifetime and the throughputs the probes are sized with. A bad value stops the start, naming the key."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from controller.config.settings import Settings, SettingsError, parse_settings

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_shipped_settings_parse_and_tolerate_the_nvidia_gpu_taint() -> None:
    data = yaml.safe_load((ROOT / "deploy/base/platform/settings.yaml").read_text())["data"]
    settings = parse_settings(data, {})
    assert settings.model_volume_access_mode == "ReadWriteOnce"
    (toleration,) = settings.gpu_node_tolerations
    assert (toleration.key, toleration.operator, toleration.effect) == (
        "nvidia.com/gpu",
        "Exists",
        "NoSchedule",
    )
    assert settings.gpu_node_selector == {}


def test_the_defaults() -> None:
    s = Settings()
    assert (s.model_volume_access_mode, s.gpu_node_tolerations, s.gpu_node_selector) == (
        "ReadWriteOnce",
        (),
        {},
    )
    assert (s.endpoint_certificate_duration, s.endpoint_certificate_renew_before) == ("2160h", "720h")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"modelVolumeAccessMode": "RWX"}, "`modelVolumeAccessMode`: must be one of ReadWriteOnce"),
        ({"gpuNodeTolerations": "[{"}, "`gpuNodeTolerations`: '[{' is not valid JSON"),
        ({"gpuNodeTolerations": '[{"effect": "Sometimes"}]'}, "`gpuNodeTolerations`:"),
        ({"gpuNodeSelector": "[1, 2]"}, "`gpuNodeSelector`: Input should be a valid dictionary"),
        ({"prometheusServerAddress": "prometheus:9090"}, "`prometheusServerAddress`: must be an http"),
        ({"metricsScrapeTokenSHA256": "my-scrape-token"}, "`metricsScrapeTokenSHA256`: must be the 64 hex"),
        ({"metricsScrapeTokenSHA256": "ab" * 31}, "`metricsScrapeTokenSHA256`: must be the 64 hex"),
        (
            {"metricsScrapeTokenSHA256": "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"},
            "`metricsScrapeTokenSHA256`: is the SHA-256 of an empty token",
        ),
    ],
)
def test_a_bad_value_names_its_key(data: dict[str, str], message: str) -> None:
    with pytest.raises(
        SettingsError, match="module setting " + message.replace("[", r"\[").replace("{", r"\{")
    ):
        parse_settings(data, {})


def test_the_prometheus_keda_asks_defaults_to_the_monitoring_one_and_is_a_setting() -> None:
    assert Settings().prometheus_server_address == "http://prometheus.d8-monitoring.svc:9090"
    assert parse_settings({}, {}).prometheus_server_address == "http://prometheus.d8-monitoring.svc:9090"
    got = parse_settings({"prometheusServerAddress": " https://prom.example:9443 "}, {})
    assert got.prometheus_server_address == "https://prom.example:9443"
    shipped = yaml.safe_load((ROOT / "deploy/base/platform/settings.yaml").read_text())["data"]
    assert parse_settings(shipped, {}).prometheus_server_address == "http://prometheus.d8-monitoring.svc:9090"


def test_the_scrape_digest_is_empty_by_default_and_kept_lowercase() -> None:
    assert parse_settings({}, {}).metrics_scrape_token_sha256 == ""
    assert parse_settings({"metricsScrapeTokenSHA256": ""}, {}).metrics_scrape_token_sha256 == ""
    got = parse_settings({"metricsScrapeTokenSHA256": "AB" * 32}, {})
    assert got.metrics_scrape_token_sha256 == "ab" * 32
