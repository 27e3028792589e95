"""``python -m bench.planner``: the same as ``python -m bench.planner.run``."""

from bench.planner.run import main

main()
