"""The controller process: resolution, planning, workload apply, auth-secret minting and probing.

Layout (pure modules decide, the shell does I/O):

- pure: ``settings``, ``facts``, ``model_facts``, ``resolve``, ``planner/``, ``render``, ``status``
- I/O edges: ``hub`` (huggingface_hub), ``probe`` (HTTP), ``kube/`` (informers, queue, leader
  election, server-side apply), ``reconciler`` (the shell), ``__main__`` (wiring)
"""
