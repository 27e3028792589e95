"""Classes by namespace (issue 21 item 8) with the controller running as its shipped ServiceAccount:
a class whose ``namespaceSelector`` selects one namespace by a label. The order in the selected
namespace resolves the class; the same order in another namespace reads ``ClassNotFound`` with
exactly the message of a class that does not exist; labelling the other namespace and unlabelling
the first flip both within seconds (the Namespace's event requeues its orders; the periodic resync
is 600 s and the model's look-again 60 s, so only the event can explain the flip)."""

from __future__ import annotations

import uuid

import pytest

from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster

MODEL = hf("nobody/no-such-model")  # the class is judged first; no device is ever planned
LABEL = "e2e.inference/tenant"


def test_a_class_serves_only_the_namespaces_its_selector_picks(platform: Platform, ns: str) -> None:
    p = platform
    tenant = uuid.uuid4().hex[:8]
    klass = p.create_class({"namespaceSelector": {"matchLabels": {LABEL: tenant}}}, prefix="ns")
    missing = f"e2e-missing-{tenant}"
    other = f"{ns}-o"
    p.kubectl("label", "namespace", ns, f"{LABEL}={tenant}")
    p.kubectl("create", "namespace", other)
    try:
        p.create_order(ns, "o", MODEL, klass=klass)
        p.create_order(other, "o", MODEL, klass=klass)
        p.create_order(other, "gone", MODEL, klass=missing)

        p.wait_reason(ns, "o", "ClassResolved", "Resolved")
        hidden = p.condition(p.wait_reason(other, "o", "ClassResolved", "ClassNotFound"), "ClassResolved")
        absent = p.condition(p.wait_reason(other, "gone", "ClassResolved", "ClassNotFound"), "ClassResolved")
        assert hidden["status"] == absent["status"] == "False"
        assert hidden["message"].replace(klass, "<class>") == absent["message"].replace(missing, "<class>")
        refused = p.order(other, "o")
        assert p.condition(refused, "ModelResolved")["status"] == "Unknown", "nothing past the class"
        assert p.condition(refused, "Ready")["reason"] == "ClassNotFound"
        assert "constraints" not in refused["status"], "nothing of the class leaks into the status"

        p.kubectl("label", "namespace", other, f"{LABEL}={tenant}")
        p.wait_reason(other, "o", "ClassResolved", "Resolved", timeout=20)
        p.kubectl("label", "namespace", ns, f"{LABEL}-")
        p.wait_reason(ns, "o", "ClassResolved", "ClassNotFound", timeout=20)
    finally:
        p.delete_namespace_and_wait(other)
