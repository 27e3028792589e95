"""Validating where a class sends its pods: ``spec.placement.nodeSelector`` and ``tolerations``.

A selector key or value the API server would refuse on the pod, or a toleration it would refuse,
must fail when the class is written, not later as every order's WorkloadFailed. The rules are the
core/v1 ones: label keys and values, Toleration's operator and effect, a value only with Equal,
``tolerationSeconds`` only with NoExecute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.api.scheduling import LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN
from webhook.problems import Path, Problems, shown

LABEL_KEY = re.compile(LABEL_KEY_PATTERN)
LABEL_VALUE = re.compile(LABEL_VALUE_PATTERN)
OPERATORS = ("Exists", "Equal")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_TOLERATIONS = 32


def scheduling_problems(problems: Problems, placement: Mapping[str, Any], base: Path) -> None:
    selector = problems.obj(placement, (*base, "nodeSelector"), required=False)
    if selector is not None:
        for key, value in selector.items():
            path = (*base, "nodeSelector", str(key))
            if not _label_key(str(key)):
                problems.add(
                    path,
                    f"the key must be a label key (`[prefix/]name`, name at most 63 characters), not {shown(key)}",
                )
            if not isinstance(value, str) or not LABEL_VALUE.match(value):
                problems.add(
                    path,
                    f"must be a label value (at most 63 letters, digits, `-`, `_` or `.`), not {shown(value)}",
                )
    tolerations = problems.items_of(placement, (*base, "tolerations"), required=False)
    if tolerations is None:
        return
    if len(tolerations) > MAX_TOLERATIONS:
        problems.add(
            (*base, "tolerations"), f"must have at most {MAX_TOLERATIONS} items, not {len(tolerations)}"
        )
    for i, item in enumerate(tolerations):
        path = (*base, "tolerations", i)
        if not isinstance(item, Mapping):
            problems.add(path, f"must be an object, not {shown(item)}")
            continue
        _toleration(problems, item, path)


def _label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(LABEL_KEY.match(key)) and len(prefix) <= 253 and len(name) <= 63


def _toleration(problems: Problems, item: Mapping[str, Any], path: Path) -> None:
    operator = problems.one_of(item, (*path, "operator"), OPERATORS, required=False) or "Equal"
    effect = problems.one_of(item, (*path, "effect"), EFFECTS, required=False)
    key = item.get("key")
    if key in (None, ""):
        if operator != "Exists":
            problems.add((*path, "key"), "is required unless `operator` is `Exists`")
    elif not isinstance(key, str) or not _label_key(key):
        problems.add((*path, "key"), f"must be a taint key (a label key), not {shown(key)}")
    value = item.get("value")
    if operator == "Exists" and value not in (None, ""):
        problems.add((*path, "value"), f"must be empty when `operator` is `Exists`, not {shown(value)}")
    elif value is not None and (not isinstance(value, str) or not LABEL_VALUE.match(value)):
        problems.add((*path, "value"), f"must be a taint value (a label value), not {shown(value)}")
    seconds = item.get("tolerationSeconds")
    if seconds is not None:
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            problems.add((*path, "tolerationSeconds"), f"must be an integer, not {shown(seconds)}")
        elif effect != "NoExecute":
            problems.add((*path, "tolerationSeconds"), "may be set only when `effect` is `NoExecute`")
