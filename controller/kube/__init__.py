"""The controller's Kubernetes runtime: API client and resource registry, raw-JSON requests, informers,
the work queue, leader election, server-side apply and the Events sender (``events``). Everything here
does I/O except ``queue``."""
