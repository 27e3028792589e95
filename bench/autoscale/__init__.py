"""``python -m bench.autoscale``: an order on real vLLM replicas of a tiny model under a load step,
then quiet, on the local plane with Prometheus and KEDA; prints the figures (bench/autoscale/figures.py)
as one JSON line and writes the replicas-over-time plot."""
