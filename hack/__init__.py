"""Developer tools: the demo (make demo/up/down), CRD generation, cert-manager and LeaderWorkerSet."""
