"""One pod's vLLM metrics in the Prometheus text format, from the stand-in's load model.

The names, help texts and labels are vLLM's own (v1 engine, 0.32: ``vllm/v1/metrics/loggers.py``,
``PrometheusStatLogger``): every series carries ``model_name`` (the served model name) and
``engine`` (``"0"``: one engine per pod); ``vllm:request_success_total`` also ``finished_reason``,
one series per reason of ``vllm.v1.engine.FinishReason`` (the stand-in only ever stops: the others
stay 0, as on a real replica that has seen none). Only the series an autoscaler reads are
published, not vLLM's histograms.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from standins.runtime.load import PodLoad

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LABELS = ["model_name", "engine"]
ENGINE = "0"
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")  # vLLM's FinishReason strings


class _PodCollector(Collector):
    def __init__(self, model: str, load: PodLoad) -> None:
        self.model, self.load = model, load

    def collect(self) -> Iterator[Metric]:
        values = [self.model, ENGINE]
        load = self.load

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=LABELS)
            family.add_metric(values, value)
            return family

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=LABELS)
            family.add_metric(values, value)
            return family

        yield gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches.", load.running
        )
        yield gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", load.waiting)
        yield gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", load.kv_cache_usage
        )
        yield counter("vllm:prompt_tokens", "Number of prefill tokens processed.", load.prompt_tokens)
        yield counter(
            "vllm:generation_tokens", "Number of generation tokens processed.", load.generation_tokens
        )
        success = CounterMetricFamily(
            "vllm:request_success",
            "Count of successfully processed requests.",
            labels=[*LABELS, "finished_reason"],
        )
        for reason in FINISH_REASONS:
            success.add_metric([*values, reason], load.success if reason == "stop" else 0)
        yield success


def exposition(model: str, load: PodLoad) -> bytes:
    """The text a scrape of the pod's ``/metrics`` gets."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_PodCollector(model, load))
    return generate_latest(registry)
