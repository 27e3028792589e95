"""The runtime stand-in's reading of an ``<order>-tls`` Secret and the contexts it serves from it.

Serving them to clients, and following a rotation of the Secret in the real API server, is
covered by tests/integration/test_runtime_standin.py and tests/integration/e2e/test_cert_rotation.py.
"""

from __future__ import annotations

import base64
import socket
import ssl
import threading
from collections.abc import Iterator

import pytest
from cryptography import x509

from standins.runtime import make_ca, make_server_pair
from standins.runtime.endpoint_tls import SecretContexts, TlsPair, leaf_serial, tls_pair

HOST = "chat.team-a.svc"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.fixture(scope="module")
def ca() -> tuple[bytes, bytes]:
    return make_ca("platform CA (endpoint tls test)")


@pytest.fixture
def contexts() -> Iterator[SecretContexts]:
    c = SecretContexts()
    yield c
    c.close()


def test_a_tls_secret_with_both_keys_is_a_pair() -> None:
    data = {"tls.crt": b64(b"CERT"), "tls.key": b64(b"KEY"), "ca.crt": b64(b"CA")}
    assert tls_pair("kubernetes.io/tls", data) == TlsPair(b"CERT", b"KEY")


@pytest.mark.parametrize(
    ("secret_type", "data"),
    [
        ("Opaque", {"tls.crt": b64(b"CERT"), "tls.key": b64(b"KEY")}),
        ("kubernetes.io/tls", {"tls.crt": b64(b"CERT")}),
        ("kubernetes.io/tls", {"tls.crt": b64(b"CERT"), "tls.key": ""}),
        ("kubernetes.io/tls", {"tls.crt": "not base64!", "tls.key": b64(b"KEY")}),
        ("kubernetes.io/tls", None),
        (None, None),
    ],
    ids=["another type", "no key", "an empty key", "not base64", "no data", "nothing"],
)
def test_anything_else_is_no_pair(secret_type: str | None, data: dict[str, str] | None) -> None:
    assert tls_pair(secret_type, data) is None


def test_a_pair_is_served_with_its_leafs_serial_and_loaded_once(
    contexts: SecretContexts, ca: tuple[bytes, bytes]
) -> None:
    cert, key = make_server_pair(*ca, (HOST,))
    served = contexts.served_for(TlsPair(cert, key))
    assert served is not None
    assert served.source == "secret"
    assert served.serial == format(x509.load_pem_x509_certificate(cert).serial_number, "x")
    assert contexts.served_for(TlsPair(cert, key)) is served


def test_a_renewed_pair_is_another_context_with_another_serial(
    contexts: SecretContexts, ca: tuple[bytes, bytes]
) -> None:
    first = contexts.served_for(TlsPair(*make_server_pair(*ca, (HOST,))))
    renewed = contexts.served_for(TlsPair(*make_server_pair(*ca, (HOST,))))
    assert first is not None and renewed is not None
    assert renewed.context is not first.context
    assert renewed.serial != first.serial


@pytest.mark.parametrize("which", ["garbage", "a key of another certificate"])
def test_a_pair_that_does_not_load_is_not_served(
    contexts: SecretContexts, ca: tuple[bytes, bytes], which: str
) -> None:
    cert, _ = make_server_pair(*ca, (HOST,))
    _, other_key = make_server_pair(*ca, (HOST,))
    pair = TlsPair(b"cert", b"key") if which == "garbage" else TlsPair(cert, other_key)
    assert contexts.served_for(pair) is None


def test_the_served_context_presents_the_pair_to_a_client_trusting_the_ca(
    contexts: SecretContexts, ca: tuple[bytes, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    cert, key = make_server_pair(*ca, (HOST,))
    served = contexts.served_for(TlsPair(cert, key))
    assert served is not None
    ca_file = tmp_path_factory.mktemp("ca") / "ca.crt"
    ca_file.write_bytes(ca[0])
    client = ssl.create_default_context(cafile=str(ca_file))
    left, right = socket.socketpair()
    with left, right:
        server_side = served.context.wrap_socket(left, server_side=True, do_handshake_on_connect=False)
        done = threading.Thread(target=server_side.do_handshake)
        done.start()
        with client.wrap_socket(right, server_hostname=HOST) as tls:
            der = tls.getpeercert(binary_form=True)
        done.join(timeout=10)
        server_side.close()
    assert der is not None
    assert leaf_serial(cert) == format(x509.load_der_x509_certificate(der).serial_number, "x")
