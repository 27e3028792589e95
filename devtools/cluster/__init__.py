"""The local real control plane: its components (one module each, components/), their build
recipe and processes, the launcher, and the simulated GPU fleet.

``python -m devtools.cluster up|down|status|env``. See docs/local-control-plane.md and the dev tooling
map in docs/architecture.md.
"""
