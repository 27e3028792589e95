"""Readings of the order's live objects and endpoint: the workload's and the groups' readiness,
drift of owned objects, the auth Secret's owner, the model fetcher's progress and the probe.

Pure: ``workload``, ``group_status``, ``drift``, ``auth_token``, ``progress``, ``probe_state``.
I/O off the reconcile workers: ``probe`` (one HTTP call), ``probes`` and ``progress_book``
(the books the observe step reads).
"""
