"""The local real control plane: build recipe, launcher, and the simulated GPU fleet.

``python -m devtools.cluster up|down|status|env``. See docs/local-control-plane.md.
"""
