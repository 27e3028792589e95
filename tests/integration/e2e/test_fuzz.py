"""A short fuzz run (bench/fuzz): generated orders, classes and recipes, valid and broken, through
the real API server and the webhook, with the controller running."""

from __future__ import annotations

import pytest

from bench.chaos.stack import on_platform
from bench.fuzz.__main__ import LABEL, fuzz
from testkit.platform import Platform

pytestmark = pytest.mark.cluster


def test_fuzzed_objects_get_no_5xx_store_nothing_the_contract_refuses_and_crash_nothing(
    platform: Platform,
) -> None:
    with on_platform(platform, replicas=1, label=LABEL) as stack:
        figures = fuzz(stack, count=300, seed=3, batch=150, workers=4)
    detail = figures.pop("detail")
    assert figures["accepted"] > 30 and figures["refused_by_webhook"] > 10, figures
    assert figures["refused_by_schema"] > 10, figures
    assert figures["webhook_5xx"] == 0 and figures["webhook_internal_errors"] == 0, detail["examples"]
    assert figures["stored_but_refused_by_contract"] == 0, detail["stored_but_refused_by_contract"]
    assert figures["crashes"] == 0, figures
    assert figures["ok"], figures
