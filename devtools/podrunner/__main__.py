"""``python -m devtools.podrunner``: the plane runner (devtools/podrunner/plane.py)."""

from devtools.podrunner.plane import main

raise SystemExit(main())
