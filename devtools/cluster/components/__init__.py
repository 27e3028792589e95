"""The components of the local plane, one module each, all of one shape (devtools/cluster/components/base.py).

``PLANE`` is the plane's daemons in start order (``down`` stops them in reverse): etcd, the three of
Kubernetes, kwok. The add-ons started onto a running plane are cert_manager and lws;
prometheus and keda are built (``python -m devtools.cluster build-metrics``) but not started yet. Adding a component
is adding a module here (and, for a daemon, an entry in ``PLANE``).
"""

from __future__ import annotations

from devtools.cluster.components.base import Daemon
from devtools.cluster.components.etcd import ETCD
from devtools.cluster.components.kube import APISERVER, CONTROLLER_MANAGER, SCHEDULER
from devtools.cluster.components.kwok import KWOK

PLANE: tuple[Daemon, ...] = (ETCD, APISERVER, CONTROLLER_MANAGER, SCHEDULER, KWOK)
