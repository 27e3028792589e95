"""The shape a reservation stores (``booking.claim_shape``) is what the plan's claims will ask for:
the devices of the claim templates the renderer writes for the plan, the leader's and the workers'
alike, so the ledger can tell the plan's claims at their allocation. Another plan's is another."""

from __future__ import annotations

from controller import render
from controller.booking import claim_shape
from controller.planner.ledger import shape_of
from tests.unit.controller.builders import make_order
from tests.unit.controller.snapshots import GPU, MIG, plan_on


def test_the_reservations_shape_is_the_rendered_templates() -> None:
    order = make_order()
    for device_class in (GPU, MIG):
        plan = plan_on(device_class)
        want = claim_shape(plan)
        assert want is not None
        templates = [render.resource_claim_template(order, plan), *render.claim_templates(order, plan)]
        for t in templates:
            assert shape_of(t["spec"]["spec"]["devices"]) == want
    assert claim_shape(plan_on(GPU)) != claim_shape(plan_on(MIG))
    assert claim_shape(None) is None
