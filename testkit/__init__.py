"""What the tests and the bench share and that needs product code: builders of the controller's and
the webhook's inputs (planner.py, webhook.py), and the product running on the local plane with the
stand-ins (platform.py). Unlike devtools, it may import controller, webhook, shared and standins;
it imports nothing from tests, bench or hack, and no production code imports it."""
