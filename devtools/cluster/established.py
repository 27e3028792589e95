"""Waiting for CustomResourceDefinitions to be Established.

``kubectl wait --for=condition=Established`` fails at once, rather than waiting, on a CRD whose
status has no conditions yet ("accessor error: <nil> is of the type <nil>"); a freshly applied
CRD on a busy API server (a thousand nodes just added) is in that state for a moment. So it is
polled until every CRD named is Established, or the time is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

Kubectl = Callable[..., str]
"""``kubectl(*args, input=None, check=True) -> stdout``, raising on failure when ``check``."""


def wait_established(kubectl: Kubectl, refs: Sequence[str], *, timeout: float = 60) -> bool:
    """Whether every CRD of ``refs`` (``crd/<name>``) is Established within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        out = kubectl("wait", "--for=condition=Established", "--timeout=10s", *refs, check=False)
        if out.count("condition met") == len(refs):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
