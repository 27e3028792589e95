"""Development tooling that neither production process imports (import-linter keeps it so).

- ``pki``: throwaway CAs and certificates in memory, for everything local that needs TLS (the local
  control plane, the webhook's local serving pair, the runtime stand-in);
- ``local_pki``: the webhook's local serving pair, for tests, the bench and the stand-ins;
- ``crdgen``: the CRDs of ``deploy/crds`` from the pydantic models (``hack/gen_crds.py``), with the
  schemas of ``crdschema``.

It ships in the wheel only because ``standins`` (which ships too) imports it; the images copy
``shared``, ``controller`` and ``webhook`` alone.
"""
