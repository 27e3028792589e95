"""The controller process: resolution, planning, workload apply, auth-secret minting and probing.

The top level is the pipeline: ``__main__`` -> ``manager`` (informers, queue, workers; ``kinds``,
``wiring``, ``store``) -> ``reconciler``: ``observe`` (-> ``snapshot``) -> ``planning`` ->
``booking`` -> ``decide`` (``desired``; -> ``intents``) -> ``act``; ``classes`` for a class's own
status; ``metrics`` and ``health`` for the process. The packages below it (docs/architecture.md):

- I/O edges: ``modelhub/`` (the Hub client and the facts store), ``live/`` (the readings of live
  objects; the probe and progress books), ``kube/`` (informers, queue, leader election, apply, Events)
- pure: ``planner/``, ``render/``, ``conditions/``, ``caching/``, ``model_facts/``, ``config/``
"""
