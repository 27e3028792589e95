"""``python -m bench.activator_fuzz``: the activator process under many malformed and slow clients at
once, with its holds, connections and memory measured (see ``__main__``)."""
