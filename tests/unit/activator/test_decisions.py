"""The activator's pure parts: hosts, tokens, the ledger, messages, what is read from API objects."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from activator import kube_objects, messages
from activator.__main__ import parse_args
from activator.hosts import OrderKey, order_of_host
from activator.ledger import HoldLedger, is_wakeup
from activator.order_book import OrderBook
from activator.tokens import bearer_matches, token_digest

CHAT = OrderKey("team", "chat")


@pytest.mark.parametrize(
    ("name", "order"),
    [
        ("chat.team.svc", CHAT),
        ("chat.team.svc.cluster.local", CHAT),
        ("CHAT.Team.SVC.", CHAT),
        ("chat.team.svc.cluster.local.", CHAT),
        ("team.svc", None),
        ("a.chat.team.svc", None),
        ("chat.team.svc.example.com", None),
        ("chat.team", None),
        ("-chat.team.svc", None),
        ("chat..svc", None),
        ("127.0.0.1", None),
        ("", None),
        (None, None),
    ],
)
def test_the_server_name_names_the_order(name: str | None, order: OrderKey | None) -> None:
    assert order_of_host(name) == order


def test_the_token_matches_only_as_bearer_with_the_exact_token() -> None:
    digest = token_digest("t0k")
    assert bearer_matches("Bearer t0k", digest)
    assert bearer_matches("bearer t0k", digest)
    for header in (None, "", "Bearer", "Bearer ", "Bearer t0k ", "Basic t0k", "t0k", "Bearer T0K"):
        assert not bearer_matches(header, digest)
    assert not bearer_matches("Bearer t0k", None)  # no token known: fail closed


def test_the_ledger_bounds_per_order_and_in_total() -> None:
    ledger = HoldLedger(per_order=2, total=3)
    other = OrderKey("team", "other")
    assert ledger.try_hold(CHAT)
    assert ledger.try_hold(CHAT)
    assert not ledger.try_hold(CHAT)
    assert ledger.try_hold(other)
    assert not ledger.try_hold(other)  # the total
    ledger.release(CHAT)
    assert ledger.try_hold(other)
    assert (ledger.held(CHAT), ledger.held(other), ledger.total) == (1, 2, 3)
    for order in (CHAT, other, other):
        ledger.release(order)
    assert ledger.total == 0
    with pytest.raises(ValueError, match="no request"):
        ledger.release(CHAT)


def test_only_the_first_hold_of_an_order_without_upstream_is_a_wakeup() -> None:
    assert is_wakeup(ready_now=False, held_before=0)
    assert not is_wakeup(ready_now=False, held_before=1)
    assert not is_wakeup(ready_now=True, held_before=0)


def test_hop_by_hop_headers_and_those_connection_names_are_not_forwarded() -> None:
    headers = [
        (b"Connection", b"keep-alive, X-Private"),
        (b"x-private", b"1"),
        (b"keep-alive", b"5"),
        (b"transfer-encoding", b"chunked"),
        (b"host", b"a"),
        (b"authorization", b"Bearer t"),
        (b"content-type", b"application/json"),
    ]
    assert messages.forwardable(headers, drop=(b"host",)) == [
        (b"authorization", b"Bearer t"),
        (b"content-type", b"application/json"),
    ]


@pytest.mark.parametrize(
    ("body", "stream"),
    [
        (b'{"stream": true}', True),
        (b'{"stream": false}', False),
        (b'{"stream": "true"}', False),
        (b"{", False),
        (b"", False),
    ],
)
def test_a_streaming_request_is_recognised(body: bytes, stream: bool) -> None:
    assert messages.wants_stream(body) is stream


def test_a_503_carries_retry_after() -> None:
    answer = messages.error(503, "later", retry_after=10)
    assert (b"retry-after", b"10") in messages.response_headers(answer)
    assert (b"connection", b"close") in messages.response_headers(answer)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _secret(
    name: str, *, order: str = "chat", kind: str = "Opaque", data: dict[str, str], rv: str = "1"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "resourceVersion": rv,
            "labels": {kube_objects.LABEL_ORDER: order},
        },
        "type": kind,
        "data": data,
    }


def _slice(
    name: str,
    endpoints: list[dict[str, Any]],
    *,
    managed_by: str = kube_objects.SLICE_CONTROLLER,
    ipv6: bool = False,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": {kube_objects.LABEL_ORDER: "chat", kube_objects.SLICE_MANAGED_BY: managed_by},
        },
        "addressType": "IPv6" if ipv6 else "IPv4",
        "ports": [{"name": "metrics", "port": 9090}, {"name": "https", "port": 8443}],
        "endpoints": endpoints,
    }


def test_the_book_keeps_the_order_s_pair_and_the_digest_of_its_token() -> None:
    book = OrderBook()
    tls = _secret(
        "chat-tls", kind="kubernetes.io/tls", data={"tls.crt": _b64(b"C"), "tls.key": _b64(b"K")}, rv="7"
    )
    book.reset_secrets(
        [
            tls,
            _secret("chat-auth", data={"token": _b64(b"t0k")}),
            _secret("chat-hf", data={"token": _b64(b"x")}),  # not one of the two: ignored
            _secret("embed-auth", order="chat", data={"token": _b64(b"y")}),  # another order's name
        ]
    )
    pair = book.tls(CHAT)
    assert pair is not None
    assert (pair.cert_pem, pair.key_pem, pair.version) == (b"C", b"K", "7")
    assert book.token_digest(CHAT) == token_digest("t0k")
    assert book.token_digest(OrderKey("team", "embed")) is None
    book.secret_event("DELETED", tls)
    assert book.tls(CHAT) is None
    book.secret_event("MODIFIED", _secret("chat-auth", data={}))
    assert book.token_digest(CHAT) is None


def test_a_tls_secret_of_another_type_or_with_a_missing_key_gives_no_pair() -> None:
    assert (
        kube_objects.tls_pair(_secret("chat-tls", data={"tls.crt": _b64(b"C"), "tls.key": _b64(b"K")}))
        is None
    )
    assert (
        kube_objects.tls_pair(_secret("chat-tls", kind="kubernetes.io/tls", data={"tls.crt": _b64(b"C")}))
        is None
    )
    assert (
        kube_objects.tls_pair(
            _secret("chat-tls", kind="kubernetes.io/tls", data={"tls.crt": "!!", "tls.key": "!!"})
        )
        is None
    )


def test_the_book_lists_ready_endpoints_of_the_order_s_own_slices_only() -> None:
    book = OrderBook()
    ready = {"addresses": ["10.0.0.1"], "conditions": {"ready": True}}
    unset = {"addresses": ["10.0.0.2"]}
    starting = {"addresses": ["10.0.0.3"], "conditions": {"ready": False}}
    terminating = {"addresses": ["10.0.0.4"], "conditions": {"ready": True, "terminating": True}}
    book.reset_slices(
        [
            _slice("chat-a", [ready, unset, starting, terminating]),
            _slice("chat-activator", [ready], managed_by="inference-controller"),  # points at us: never
        ]
    )
    assert book.ready("team", "chat") == ["10.0.0.1:8443", "10.0.0.2:8443"]
    book.slice_event("ADDED", _slice("chat-b", [{"addresses": ["fd00::1"]}], ipv6=True))
    assert book.ready("team", "chat")[-1] == "[fd00::1]:8443"
    book.slice_event("MODIFIED", _slice("chat-a", [starting]))
    book.slice_event("DELETED", _slice("chat-b", []))
    assert book.ready("team", "chat") == []


def test_the_command_line_sets_every_setting() -> None:
    settings, args = parse_args(
        [
            "--upstream-ca-file",
            "/ca.pem",
            "--max-hold-seconds",
            "30",
            "--max-held-per-order",
            "8",
            "--upstream-address-override",
            "127.0.0.1:9443",
        ]
    )
    assert settings.upstream_ca_file == "/ca.pem"
    assert settings.max_hold_seconds == 30.0
    assert settings.max_held_per_order == 8
    assert settings.upstream_address_override == "127.0.0.1:9443"
    assert settings.port == 8443
    assert args.kubeconfig is None
    with pytest.raises(SystemExit):
        parse_args([])


@pytest.mark.parametrize(
    "flags",
    [["--max-hold-seconds", "0"], ["--max-held-total", "-1"], ["--upstream-address-override", "nohost"]],
)
def test_impossible_settings_are_refused(flags: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--upstream-ca-file", "/ca.pem", *flags])


def test_a_fresh_list_replaces_the_book() -> None:
    book = OrderBook()
    book.reset_secrets([_secret("chat-auth", data={"token": _b64(b"t0k")})])
    book.reset_slices([_slice("chat-a", [{"addresses": ["10.0.0.1"]}])])
    book.reset_secrets([])
    book.reset_slices([])
    assert book.token_digest(CHAT) is None
    assert book.ready("team", "chat") == []


def test_a_request_loops_when_a_via_hop_names_the_activator() -> None:
    assert messages.looped([(b"Via", messages.VIA)])
    assert messages.looped([(b"via", b"1.0 fred, 1.1 inference-activator")])
    assert messages.looped([(b"via", b"1.1 proxy"), (b"via", b"HTTP/1.1 inference-activator (comment)")])
    assert not messages.looped([(b"via", b"1.1 inference-activator-other"), (b"x-via", messages.VIA)])
    assert not messages.looped([(b"via", b"inference-activator")])  # the received-by is the second token
    assert not messages.looped([])
