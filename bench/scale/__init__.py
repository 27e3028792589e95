"""The scale benchmark: ``python -m bench.scale --nodes N --orders M [--keep]`` (run.py)."""
