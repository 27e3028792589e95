"""The runtime stand-in in front of an order at zero: a connection goes to the activator while the
order's Service leads there and the order has no ready backend of its own, and never comes back to
it once the order has one (the activator forwards back through the stand-in's address).

The "activator" here is the router tests' TLS backend (its own certificate for the host); the
EndpointSlices come from a source set by hand (``OrderDirectory.set_slice_source``), as the API
would list them by the order label.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from standins.runtime import RunningRuntime, start_runtime
from standins.runtime.orders import (
    ACTIVATOR_SLICE_MANAGER,
    KUBE_SLICE_MANAGER,
    OrderKey,
    ServiceSlices,
    service_slices,
)
from tests.unit.standins.test_runtime_router import (
    HOST,
    Backend,
    closed_port,
    eventually,
    fetch,
    forwarded_for,
    serial_of,
    serving_backend,
)

KEY = OrderKey("team-a", "chat")


def activator_slice(
    address: str, port: int, *, ready: bool | None = True, service: str = "chat"
) -> dict[str, Any]:
    conditions = {} if ready is None else {"ready": ready}
    return {
        "metadata": {
            "name": "chat-activator",
            "namespace": "team-a",
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": ACTIVATOR_SLICE_MANAGER,
                "ai.deckhouse.io/inference-service": "chat",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [address], "conditions": conditions}],
    }


def pod_slice(*, ready: bool) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "chat-abcde",
            "namespace": "team-a",
            "labels": {
                "kubernetes.io/service-name": "chat",
                "endpointslice.kubernetes.io/managed-by": KUBE_SLICE_MANAGER,
                "ai.deckhouse.io/inference-service": "chat",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.0.0.7"], "conditions": {"ready": ready}}],
    }


class Slices:
    """The order's slices as the API would list them; counts the reads."""

    def __init__(self) -> None:
        self.items: list[Mapping[str, Any]] = []
        self.reads = 0

    def __call__(self, key: OrderKey) -> list[Mapping[str, Any]]:
        self.reads += 1
        return list(self.items) if key == KEY else []


def test_the_activator_s_slice_and_the_order_s_own_are_told_apart() -> None:
    assert service_slices("chat", []) == ServiceSlices()
    assert service_slices("chat", [activator_slice("10.1.0.5", 9443)]) == ServiceSlices(
        ("10.1.0.5:9443",), False
    )
    assert service_slices("chat", [activator_slice("10.1.0.5", 9443, ready=None)]).activator == (
        "10.1.0.5:9443",
    )
    assert service_slices("chat", [activator_slice("10.1.0.5", 9443, ready=False)]) == ServiceSlices()
    # another Service's slice by that manager is not the order's Service: kube-proxy would not use it
    assert service_slices("chat", [activator_slice("10.1.0.5", 9443, service="other")]) == ServiceSlices()
    assert service_slices("chat", [pod_slice(ready=True)]) == ServiceSlices((), True)
    assert service_slices("chat", [pod_slice(ready=False)]) == ServiceSlices()
    both = service_slices("chat", [activator_slice("10.1.0.5", 9443), pod_slice(ready=True)])
    assert both == ServiceSlices(("10.1.0.5:9443",), True)
    foreign = pod_slice(ready=True)
    foreign["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] = "someone-else"
    assert service_slices("chat", [foreign]) == ServiceSlices()
    ipv6 = activator_slice("fd00::5", 9443) | {"addressType": "IPv6"}
    assert service_slices("chat", [ipv6]).activator == ("[fd00::5]:9443",)


@pytest.fixture
def zero(
    ca: tuple[bytes, bytes, Path], standin_pair: tuple[bytes, bytes]
) -> Iterator[tuple[RunningRuntime, Slices]]:
    """A stand-in that answers for the order itself (registered, its issued certificate), reading
    the order's slices from a source the test sets; a long cache, to show what is read anew."""
    slices = Slices()
    with start_runtime(cache_seconds=60) as rt:
        rt.register("team-a", "chat", model="Qwen/Qwen2.5-7B-Instruct", token=None, tls=standin_pair)
        rt.state.directory.set_slice_source(slices)
        yield rt, slices


def at(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def test_an_order_at_zero_is_passed_through_to_the_activator(
    zero: tuple[RunningRuntime, Slices],
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    backend_pair: tuple[bytes, bytes],
) -> None:
    rt, slices = zero
    slices.items = [activator_slice(*at(backend.address))]
    serial, answer = fetch(rt, ca[2], HOST)
    assert serial == serial_of(backend_pair[0])  # the activator's handshake, not the stand-in's
    assert answer.endswith(b'"served_by": "real runtime", "path": "/v1/models"}')
    [entry] = eventually(forwarded_for(rt, HOST))
    assert entry["activator"] is True and entry["backend"] == backend.address
    assert not [r for r in rt.requests() if r["host"] == HOST]


def test_once_the_order_has_a_ready_replica_the_activator_s_forward_reaches_it_not_the_activator(
    zero: tuple[RunningRuntime, Slices],
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    standin_pair: tuple[bytes, bytes],
) -> None:
    """The cache says "at zero" (read a moment ago), the API now lists a ready replica: the
    connection (as the activator's forward would be) is the order's own, read anew."""
    rt, slices = zero
    slices.items = [activator_slice(*at(backend.address))]
    assert fetch(rt, ca[2], HOST)[0] != serial_of(standin_pair[0])
    slices.items = [activator_slice(*at(backend.address)), pod_slice(ready=True)]
    reads = slices.reads
    serial, answer = fetch(rt, ca[2], HOST)
    assert serial == serial_of(standin_pair[0])  # the stand-in serves the order's replica
    assert b"Qwen/Qwen2.5-7B-Instruct" in answer
    assert slices.reads == reads + 1  # the fresh read that kept it from the activator
    assert len(eventually(forwarded_for(rt, HOST))) == 1  # only the first went to the activator


def test_a_ready_pod_the_stand_in_serves_keeps_the_order_from_the_activator(
    zero: tuple[RunningRuntime, Slices],
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    standin_pair: tuple[bytes, bytes],
) -> None:
    rt, slices = zero
    slices.items = [activator_slice(*at(backend.address))]
    rt.set_pods("team-a", "chat", ["chat-0"])
    assert fetch(rt, ca[2], HOST)[0] == serial_of(standin_pair[0])
    assert not eventually(forwarded_for(rt, HOST), timeout=0.3)


def test_a_routed_backend_wins_over_the_activator(
    zero: tuple[RunningRuntime, Slices],
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    tmp_path: Path,
    backend_pair: tuple[bytes, bytes],
) -> None:
    rt, slices = zero
    with serving_backend(tmp_path, backend_pair) as runtime:
        slices.items = [activator_slice(*at(backend.address))]
        rt.route("team-a", "chat", [runtime.address])
        fetch(rt, ca[2], HOST)
        [entry] = eventually(forwarded_for(rt, HOST))
        assert entry["backend"] == runtime.address and entry["activator"] is False


def test_a_claimed_order_at_zero_goes_to_the_activator_and_once_listed_ready_is_closed_until_it_listens(
    zero: tuple[RunningRuntime, Slices], ca: tuple[bytes, bytes, Path], backend: Backend
) -> None:
    """A real runtime claims the order (route ``[]``): at zero its connections go to the activator;
    once its replica is listed ready but its runtime does not listen yet, the connection (the
    activator's forward) is closed unanswered, and the activator holds the request and retries."""
    rt, slices = zero
    rt.route("team-a", "chat", [])
    slices.items = [activator_slice(*at(backend.address))]
    assert b"real runtime" in fetch(rt, ca[2], HOST)[1]
    slices.items = [activator_slice(*at(backend.address)), pod_slice(ready=True)]
    with pytest.raises((ssl.SSLError, ConnectionError)):
        fetch(rt, ca[2], HOST)
    entries = eventually(lambda: [f for f in rt.forwarded() if f["host"] == HOST and not f["activator"]])
    assert entries[0]["backend"] is None and "none is ready" in str(entries[0]["error"])


def test_an_activator_slice_without_a_ready_endpoint_is_not_used(
    zero: tuple[RunningRuntime, Slices], ca: tuple[bytes, bytes, Path], standin_pair: tuple[bytes, bytes]
) -> None:
    rt, slices = zero
    slices.items = [activator_slice("127.0.0.1", closed_port(), ready=False)]
    assert fetch(rt, ca[2], HOST)[0] == serial_of(standin_pair[0])


def test_without_slices_to_read_nothing_is_peeked_and_the_stand_in_answers(
    ca: tuple[bytes, bytes, Path], standin_pair: tuple[bytes, bytes]
) -> None:
    with start_runtime() as rt:
        assert not rt.state.directory.reads_slices
        rt.register("team-a", "chat", model="Qwen/Qwen2.5-7B-Instruct", token=None, tls=standin_pair)
        assert fetch(rt, ca[2], HOST)[0] == serial_of(standin_pair[0])
