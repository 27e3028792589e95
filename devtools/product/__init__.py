"""The product's own processes run locally from this checkout: ``python -m controller``
(controller.py), ``python -m webhook`` (webhook.py) and ``python -m activator`` (activator.py). Started as subprocesses, never imported:
devtools imports no product code. One copy each for the demo, the tests and the bench."""
