"""What the e2e platform reads from the shipped endpoint PKI's Secrets (testkit/endpoint_pki.py): the
CA the probe trusts, and the CA issuer's pair. A leaf, a missing key or bytes that are not PEM are
not taken for the CA (the platform would wait on, not trust, them)."""

from __future__ import annotations

import base64

import yaml

from standins.runtime import make_ca, make_server_pair
from testkit.endpoint_pki import (
    CA_SECRET,
    ENDPOINT_ISSUER,
    MANIFEST,
    TRUST_SECRET,
    signing_pair,
    trust_bundle,
)


def secret(**data: bytes) -> dict[str, object]:
    return {"data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def test_the_trust_bundle_is_the_ca_in_ca_crt() -> None:
    ca, _ = make_ca()
    assert trust_bundle(secret(**{"ca.crt": ca})) == ca


def test_no_secret_no_ca_crt_a_leaf_or_garbage_is_no_trust_bundle() -> None:
    ca, key = make_ca()
    leaf, _ = make_server_pair(ca, key, ("a.b.svc",))
    assert trust_bundle(None) is None
    assert trust_bundle(secret(**{"tls.crt": ca})) is None
    assert trust_bundle(secret(**{"ca.crt": leaf})) is None
    assert trust_bundle(secret(**{"ca.crt": b"not pem"})) is None
    assert trust_bundle({"data": {"ca.crt": "%%% not base64"}}) is None


def test_the_signing_pair_is_a_ca_with_its_key() -> None:
    ca, key = make_ca()
    leaf, leaf_key = make_server_pair(ca, key, ("a.b.svc",))
    assert signing_pair(secret(**{"tls.crt": ca, "tls.key": key})) == (ca, key)
    assert signing_pair(secret(**{"tls.crt": ca})) is None
    assert signing_pair(secret(**{"tls.crt": leaf, "tls.key": leaf_key})) is None


def test_the_names_are_those_of_the_shipped_manifest() -> None:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    certs = {
        (d["metadata"]["namespace"], d["spec"]["secretName"]) for d in docs if d["kind"] == "Certificate"
    }
    assert {CA_SECRET, TRUST_SECRET} <= certs
    (endpoints,) = [
        d for d in docs if d["kind"] == "ClusterIssuer" and d["metadata"]["name"] == ENDPOINT_ISSUER
    ]
    assert endpoints["spec"]["ca"]["secretName"] == CA_SECRET[1]
