"""The chain's conditions, judged from what was read. Pure.

``resolve``: ClassResolved, ModelResolved and the class's own Ready; ``replan``: when the launch
plan is computed again and how replanCount moves; ``status``: the order's status from the verdicts.
"""
