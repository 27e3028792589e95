"""The DRA CEL environment: compile and evaluate device selectors like the Kubernetes scheduler does.

Called by the webhook (``selector_error``, to refuse a class whose ``placement.selector`` cannot be
judged) and by the planner (``compile_selector`` then ``Selector.matches`` for every device).

The environment follows ``k8s.io/dynamic-resource-allocation/cel``: one variable, ``device``, with
``device.driver`` (string), ``device.attributes[domain].name`` (bool, int, string or semver) and
``device.capacity[domain].name`` (quantity). A domain that the device does not have is an empty map,
so ``"x" in device.attributes["other.example.com"]`` is false; reading a missing name is an error,
as in Kubernetes. The functions are CEL's standard ones plus the Kubernetes libraries a DRA
expression may use: the quantity library (``quantity``, ``isQuantity``, ``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``sign``, ``isInteger``, ``asInteger``,
``asApproximateFloat``), the semver library (``semver``, ``isSemver``, ``major``, ``minor``,
``patch`` and the same comparisons) and the string extensions (``lowerAscii``, ``upperAscii``,
``trim``, ``split``, ``join``, ``replace``, ``indexOf``, ``lastIndexOf``, ``charAt``,
``substring``). Any other function is refused when the expression is compiled, because cel-python
only checks the syntax.

Pure: no I/O. The parts: ``semver``, ``device`` (the device view), ``library`` (the functions)
and ``selectors`` (compile and evaluate); this package re-exports their public names.
"""

from __future__ import annotations

from shared.cel.device import AttributeValue, DeviceView, device_view
from shared.cel.errors import CelError
from shared.cel.library import ALLOWED_FUNCTIONS, Quantity
from shared.cel.selectors import Selector, compile_selector, selector_error
from shared.cel.semver import Semver

__all__ = [
    "ALLOWED_FUNCTIONS",
    "AttributeValue",
    "CelError",
    "DeviceView",
    "Quantity",
    "Selector",
    "Semver",
    "compile_selector",
    "device_view",
    "selector_error",
]
