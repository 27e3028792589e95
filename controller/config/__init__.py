"""The module settings: the ConfigMap read at start (``settings``) and the endpoint certificate
lifetime checks it runs (``cert_lifetime``). Pure; every layer may read them.
"""
