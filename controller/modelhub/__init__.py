"""The model Hub's client: the requests (retried on 429/503), what a failure means for an order,
and the facts' two levels of caching (in memory, then ConfigMaps).

I/O: ``client`` (what the reconciler asks), ``requests`` (huggingface_hub), ``store`` (the
ConfigMaps). No I/O: ``errors`` (huggingface_hub's exceptions -> an order's reasons),
``exceptions``; pure: ``retry``, ``cache``.
"""
