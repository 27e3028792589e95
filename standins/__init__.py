"""Stand-ins for what cannot run here: an HF mirror (Hub-compatible, loopback) and a runtime stand-in.

Test and demo infrastructure only; neither is imported by ``shared``, ``controller`` or ``webhook``.
"""
