"""Everything both processes need and nothing that does I/O.

The API models, condition and phase rules, reason constants, quantity parsing and the names of
the objects an order owns. Nothing here opens a socket, reads a clock or imports a Kubernetes or
HTTP client; import-linter enforces that.
"""
