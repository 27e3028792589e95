"""Ray inside a multi-node group: who may reach it, and its token. Pure.

Ray (the launcher of vLLM's multi-node runs) listens on many ports: the GCS on 6379, the client
server on 10001, the dashboard on 8265, the dashboard agent on 52365, and ports of its own choosing
for the raylet (node manager, object manager), the metrics and runtime-env agents and every worker
process (10002-19999 by default); NCCL opens its own between the pods as well. Anything that reaches
them can run code in the leader, which holds the API key, the devices and the weights.

- **The NetworkPolicy**: one per group of the LeaderWorkerSet (``<order>-group-<i>``, for group
  index ``i`` of ``replicas``). It selects the group's pods by LWS's own pod labels
  (``leaderworkerset.sigs.k8s.io/name`` and ``.../group-index``) and admits:

  - every port from the same group's pods (Ray's and NCCL's ports are not fixed, so no port list
    can be narrower without breaking the run);
  - from anywhere, only the serving port (``https``, 8443: the Service, the ingress controller
    and the controller's probe reach it as before) and the model fetcher's progress port (9090,
    scraped by the controller while the weights download).

  Kubernetes semantics (networking.k8s.io/v1): a pod selected by a policy with ``policyTypes:
  [Ingress]`` accepts only what some policy selecting it allows; a rule with ``from`` and no
  ``ports`` allows every port from those peers; a rule with ``ports`` and no ``from`` allows those
  ports from every source; a ``podSelector`` peer without ``namespaceSelector`` means the policy's
  own namespace. Traffic from the pod's own node (the kubelet's probes) is always allowed. A
  policy is enforced only by a network plugin that implements it; the local plane has none.
- **The token**: Ray 2.52 and later enforce ``RAY_AUTH_MODE=token`` with the shared secret in
  ``RAY_AUTH_TOKEN`` on every RPC and HTTP entry point; older Ray ignores both variables. When the
  class requires a token, leader and workers get both, the secret being the order's own
  ``<order>-auth`` token. An image whose Ray predates 2.52 (``vllm/vllm-openai:v0.11.0``, which
  requires ``ray[cgraph]>=2.48``) has no token authentication, so there the NetworkPolicy is the
  protection; an image with Ray 2.52+ enforces the token too.
"""

from __future__ import annotations

from controller.render.common import Obj, meta
from shared import names
from shared.api.order import InferenceService

SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
# Open to every source: the runtime's HTTPS port and the fetcher's progress port. Ray's and NCCL's
# ports are left to the group's own pods.
OPEN_PORTS = (names.RUNTIME_PORT, names.FETCHER_METRICS_PORT)
RAY_AUTH_MODE_ENV = "RAY_AUTH_MODE"
RAY_AUTH_TOKEN_ENV = "RAY_AUTH_TOKEN"


def policy_name(set_name: str, group: int) -> str:
    return f"{set_name}-{group}"


def group_selector(set_name: str, group: int) -> Obj:
    """The labels LeaderWorkerSet puts on every pod (leader and workers) of group ``group``."""
    return {"matchLabels": {SET_NAME_LABEL: set_name, GROUP_INDEX_LABEL: str(group)}}


def network_policy(order: InferenceService, set_name: str, group: int) -> Obj:
    """Group ``group`` of the set: every port from its own pods, the open ports from anywhere."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta(order, policy_name(set_name, group)),
        "spec": {
            "podSelector": group_selector(set_name, group),
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": group_selector(set_name, group)}]},
                {"ports": [{"protocol": "TCP", "port": port} for port in OPEN_PORTS]},
            ],
        },
    }


def network_policies(order: InferenceService, set_name: str, groups: int) -> list[Obj]:
    """One policy per group the set runs (``spec.replicas`` groups, indexed from 0)."""
    return [network_policy(order, set_name, i) for i in range(groups)]


def auth_env(order: InferenceService) -> list[Obj]:
    """Ray's token authentication, the token read from the order's ``<order>-auth`` Secret."""
    return [
        {"name": RAY_AUTH_MODE_ENV, "value": "token"},
        {
            "name": RAY_AUTH_TOKEN_ENV,
            "valueFrom": {
                "secretKeyRef": {"name": names.auth_secret(order.metadata.name), "key": names.AUTH_TOKEN_KEY}
            },
        },
    ]
