"""The admission webhook: pure ``review -> response`` handlers behind a small ASGI app over TLS.

The API server calls it on every write of our kinds (failurePolicy Fail), so it answers from the
request alone: no Kubernetes client, no clock, no state between requests.
"""
