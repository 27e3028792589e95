"""The controller's Kubernetes runtime: API client and resource registry, raw-JSON requests, informers,
the work queue, leader election and server-side apply. Everything here does I/O except ``queue``."""
