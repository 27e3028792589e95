"""``make demo`` / ``make up`` / ``make down``: the whole product on one machine.

    python -m hack.demo demo   # up, then the guide's order (examples/support-llm.yaml) to Ready, and a curl
    python -m hack.demo up     # control plane, CRDs, RBAC, class, recipe, webhook, controller, stand-ins
    python -m hack.demo down   # stop what up started, then the local control plane [--keep-cluster]
    python -m hack.demo status

The webhook, the controller, the Hugging Face mirror, the runtime stand-in and the LeaderWorkerSet
controller run as local background processes with their logs and pids under ``.demo/``
(``INFERENCE_DEMO_DIR``). The local control plane is ``python -m devtools.cluster`` (state in
``.cluster/``). With ``HF_ENDPOINT`` set, the controller uses that Hub endpoint and no mirror is started.

- ``state.py``: ``Demo``, which holds every path (and kubectl, and the demo's own state.json);
- ``steps.py``: the steps of ``up``, plain functions over ``Demo``, and ``stop_processes``;
- ``order.py``: the guide's order to Ready and the curl of its endpoint, with the pure helpers
  (progress lines, the curl command) tested in tests/unit/test_demo.py;
- ``__main__.py``: the command line.
"""
