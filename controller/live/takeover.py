"""No takeover: the controller writes a name only when it is free or already the order's. Pure.

Server-side apply creates or overwrites whatever holds the name. Without this check an order named
``web`` would overwrite a Deployment, Service, Ingress or HPA named ``web`` that someone else made,
add itself as its controller, and the garbage collector would delete that object with the order:
the controller would do what the order's author may not.

Before the workload is applied, every name it writes is judged (``gate``):

- every object the plan wants (``desired.Wanted.names``);
- ``<order>-auth`` while the order has no token (the controller mints it into that Secret);
- ``<order>-tls`` while the Certificate is not yet the order's: cert-manager writes the issued
  key into the Secret of that name, whoever made it, and the pods mount it.

A name is the order's when the object holding it has an ownerReference to the order's uid, or is
an earlier order of the same name's (its only ownerReference is the controller reference to an
InferenceService of this name: that owner is gone, so the garbage collector deletes it anyway;
``controller.live.auth_token`` takes such an ``<order>-auth`` over), or, for ``<order>-tls``, is
cert-manager's Secret of the order's Certificate. Anything else is a conflict: the order reads
``WorkloadReady=False/NameConflict`` naming the kind and the name, and nothing is written.

The caches hold only objects labelled with an order. An object without that label is found by
name: observe reads, with a GET, the names the order's last render wanted that its caches do not
hold (``names_to_read``), and the snapshot carries what it found (``Snapshot.held``). A name not
read yet is not written yet: the order is looked at again at once. Between that read and the apply
lies a few milliseconds' window; server-side apply has no create-only mode to close it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shared import names
from shared import reasons as r
from shared.api.order import InferenceService
from shared.conditions import Verdict, false

Obj = dict[str, Any]
Name = tuple[str, str, str]  # (apiVersion, kind, name)
Held = Mapping[tuple[str, str], Obj | None]  # (kind, name) -> the object read by name, None: free
CERT_MANAGER_CERTIFICATE = "cert-manager.io/certificate-name"  # set by cert-manager on its Secrets
RETRY_SECONDS = 30.0  # a conflict's holder is not watched: its name is read again this often


@dataclass(frozen=True, slots=True)
class Gate:
    """Why the workload is not written now: a conflict (``verdict``), or names not read yet."""

    verdict: Verdict | None
    wait: float


Live = Callable[[str, str], Obj | None]  # (kind, name) -> the object in the order's caches


def names_to_judge(order: InferenceService, wanted: Iterable[Name], *, token: bool, live: Live) -> list[Name]:
    """The names a write of ``wanted`` touches (see the module doc); ``token``: the order's
    ``<order>-auth`` is to be minted."""
    out = list(wanted)
    name = order.metadata.name
    if token:
        out.append(("v1", "Secret", names.auth_secret(name)))
    cert = live("Certificate", names.certificate(name))
    own_cert = cert is not None and is_own(cert, order, "Certificate")
    if not own_cert and any(kind == "Certificate" for _, kind, _ in out):
        out.append(("v1", "Secret", names.tls_secret(name)))
    return out


def names_to_read(judged: Iterable[Name], live: Live) -> list[Name]:
    """Of the names to judge, those the caches do not hold: observe reads them by name."""
    return [n for n in judged if live(n[1], n[2]) is None]


def is_own(obj: Obj, order: InferenceService, kind: str) -> bool:
    """Whether ``obj`` (holding a name the order writes) is the order's (see the module doc)."""
    meta = obj.get("metadata") or {}
    refs = meta.get("ownerReferences") or []
    if any(ref.get("uid") == order.metadata.uid for ref in refs):
        return True
    name = order.metadata.name
    if len(refs) == 1 and refs[0].get("controller") and refs[0].get("kind") == "InferenceService":
        return bool(refs[0].get("name") == name)
    annotations = meta.get("annotations") or {}
    return (
        kind == "Secret"
        and meta.get("name") == names.tls_secret(name)
        and annotations.get(CERT_MANAGER_CERTIFICATE) == names.certificate(name)
    )


def gate(order: InferenceService, judged: Iterable[Name], live: Live, held: Held) -> Gate | None:
    """None when every name is free or the order's; else why not (a conflict wins over names not
    read yet). ``live`` looks a name up in the caches, ``held`` in what observe read by name."""
    unread = False
    for _, kind, name in judged:
        obj = live(kind, name)
        if obj is None:
            if (kind, name) not in held:
                unread = True
                continue
            obj = held[(kind, name)]
        if obj is not None and not is_own(obj, order, kind):
            return Gate(conflict(order, kind, name), RETRY_SECONDS)
    return Gate(None, 1.0) if unread else None


def judge(
    order: InferenceService, wanted: Iterable[Name], *, token: bool, live: Live, held: Held
) -> Gate | None:
    """``gate`` over every name a write of ``wanted`` (and a mint, with ``token``) touches."""
    return gate(order, names_to_judge(order, wanted, token=token, live=live), live, held)


def conflict(order: InferenceService, kind: str, name: str) -> Verdict:
    ns = order.metadata.namespace
    return false(
        r.NAME_CONFLICT,
        f"{kind} `{name}` already exists in namespace `{ns}` and is not owned by this order; the "
        "controller leaves it untouched. Delete or rename it, or give the order another name.",
    )
