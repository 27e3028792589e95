"""Device selectors: compile a DRA CEL expression (refusing undeclared functions) and evaluate it. Pure.

cel-python only checks the syntax, so every called function or method name is checked against
``ALLOWED_FUNCTIONS`` when the expression is compiled, as the Kubernetes type checker would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from shared.cel.device import DeviceView, to_cel
from shared.cel.errors import CelError
from shared.cel.library import ALLOWED_FUNCTIONS, EXTENSIONS


def _calls(tree: lark.Tree[lark.Token]) -> Iterator[tuple[str, int | None, int | None]]:
    """Every called function or method name in the tree, with its line and column."""
    for node in tree.iter_subtrees():
        token: Any = None
        if node.data == "member_dot_arg" or node.data in ("ident_arg", "dot_ident_arg"):
            token = node.children[1] if node.data == "member_dot_arg" else node.children[0]
        if isinstance(token, lark.Token):
            yield str(token), token.line, token.column


def _compile(expr: str) -> lark.Tree[lark.Token]:
    if not expr.strip():
        raise CelError("the selector is empty")
    try:
        tree = celpy.Environment().compile(expr)
    except CELParseError as e:
        raise CelError(_syntax_message(expr, e.line, e.column)) from e
    unknown = sorted(
        {(line or 0, col or 0, name) for name, line, col in _calls(tree) if name not in ALLOWED_FUNCTIONS}
    )
    if unknown:
        line, col, name = unknown[0]
        raise CelError(
            f"undeclared function {name!r} at line {line}, column {col}: a DRA selector may use CEL's "
            "standard functions, quantity(), semver(), their methods, and the string extensions"
        )
    return tree


def _syntax_message(expr: str, line: int | None, column: int | None) -> str:
    if not line or not column:
        return "syntax error: the selector is not a CEL expression"
    lines = expr.splitlines() or [""]
    text = lines[line - 1] if line <= len(lines) else ""
    near = text[column - 1 : column + 9].strip()
    what = f"unexpected {near!r}" if near else "unexpected end of the expression"
    return f"syntax error at line {line}, column {column}: {what}"


def selector_error(expr: str) -> str | None:
    """None when the selector compiles in the DRA environment, else a message with line and column."""
    try:
        _compile(expr)
    except CelError as e:
        return str(e)
    return None


@dataclass(frozen=True)
class Selector:
    """A compiled selector. ``matches`` evaluates it against one device."""

    expression: str
    _runner: Any = field(repr=False, compare=False)

    def matches(self, device: DeviceView) -> bool:
        """True or False; CelError when the evaluation fails or the result is not a bool."""
        try:
            result = self._runner.evaluate({"device": to_cel(device)})
        except CELEvalError as e:
            raise CelError(f"the selector failed on a device of {device.driver}: {_eval_message(e)}") from e
        except (CelError, ValueError, TypeError, KeyError, AttributeError) as e:
            raise CelError(f"the selector failed on a device of {device.driver}: {e}") from e
        if isinstance(result, CELEvalError):
            raise CelError(f"the selector failed on a device of {device.driver}: {_eval_message(result)}")
        if not isinstance(result, celtypes.BoolType | bool):
            raise CelError(f"the selector must evaluate to a bool, not {type(result).__name__}")
        return bool(result)


def compile_selector(expr: str) -> Selector:
    """Compile a selector; raises CelError (the same message ``selector_error`` returns)."""
    tree = _compile(expr)
    # a fresh Environment per selector: celpy's keeps the last program it made
    return Selector(expression=expr, _runner=celpy.Environment().program(tree, functions=dict(EXTENSIONS)))


def _eval_message(e: CELEvalError) -> str:
    text = str(e.args[0]) if e.args else "evaluation error"
    if len(e.args) > 2 and e.args[2]:
        text += f" ({e.args[2]})"
    return text
