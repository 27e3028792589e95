"""``python -m bench.zero``: an order of a class with ``minReplicas: 0`` on real vLLM, woken from zero
by a request (see ``__main__``)."""
