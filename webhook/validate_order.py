"""Validating an order: the source union, the Hugging Face repo id and revision, the class name.

The CRD schema checks the same union with CEL, with the same messages; this adds what a schema
cannot say well (the Hub's own repo id and git ref rules, DNS names of referenced objects) and
reports every problem at once. Model and class may change on UPDATE, so only the new object is read.

On CREATE the name must also be a DNS-1035 label (``order_name_problems``): the order's Service takes
its name, and a name the CRD accepts (``llama3.1``, ``8b-chat``) would otherwise fail later as
WorkloadFailed. Names are immutable, so an UPDATE is never refused for its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.api.enums import CATALOG_KINDS, MODEL_SOURCES
from shared.api.order import HF_REPO_ID_PATTERN, REVISION_PATTERN, SECRET_KEY_PATTERN
from webhook.problems import Problems

HF_REPO_ID = re.compile(HF_REPO_ID_PATTERN)
REVISION = re.compile(REVISION_PATTERN)
SECRET_KEY = re.compile(SECRET_KEY_PATTERN)

_SRC = "`spec.model.src` is"
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = 63


def order_name_problems(obj: Mapping[str, Any]) -> list[str]:
    """The order's name must be a DNS-1035 label: its Service, endpoint host and labels carry it."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        return []  # generateName is resolved before admission; nothing to say about a missing name
    if len(name) <= MAX_NAME and DNS_1035_LABEL.match(name):
        return []
    return [
        f"`metadata.name`: must be a DNS-1035 label, because the order's Service takes its name: at most "
        f"{MAX_NAME} characters, lower case letters, digits and `-`, starting with a letter and ending with a "
        f'letter or digit (regex `[a-z]([-a-z0-9]*[a-z0-9])?`), not "{name}"'
    ]


def order_problems(obj: Mapping[str, Any]) -> list[str]:
    """Every problem of the order ``obj`` (the raw object of the request), in field order."""
    problems = Problems()
    spec = problems.obj(obj, ("spec",), required=True)
    if spec is None:
        return problems.items
    problems.dns_name(
        spec,
        ("spec", "inferenceServiceClassName"),
        required=True,
        what="the name of an InferenceServiceClass",
    )
    model = problems.obj(spec, ("spec", "model"), required=True)
    if model is None:
        return problems.items
    src = problems.one_of(model, ("spec", "model", "src"), MODEL_SOURCES, required=True)
    ref = problems.obj(model, ("spec", "model", "ref"), required=True)
    if src == "HuggingFace":
        _hugging_face(problems, model, ref)
    elif src == "Catalog":
        _catalog(problems, model, ref)
    return problems.items


def _hugging_face(problems: Problems, model: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
    when = f"{_SRC} `HuggingFace`"
    if ref is not None:
        problems.forbidden(ref, ("spec", "model", "ref", "kind"), when=when)
        name = problems.string(
            ref,
            ("spec", "model", "ref", "name"),
            required=True,
            pattern=HF_REPO_ID,
            expected=f"a Hugging Face repository id `<owner>/<repo>` when {when}",
        )
        if name is not None:
            _hub_repo_rules(problems, name)
        revision = problems.string(
            ref,
            ("spec", "model", "ref", "revision"),
            required=False,
            pattern=REVISION,
            expected="a branch, tag or commit (letters, digits, `.`, `_`, `-` and `/`)",
            max_length=255,
        )
        if revision is not None:
            _git_ref_rules(problems, revision)
    auth = problems.obj(model, ("spec", "model", "authSecretRef"), required=False)
    if auth is not None:
        problems.dns_name(
            auth,
            ("spec", "model", "authSecretRef", "name"),
            required=True,
            what="the name of a Secret in the order's namespace",
        )
        problems.string(
            auth,
            ("spec", "model", "authSecretRef", "key"),
            required=False,
            pattern=SECRET_KEY,
            expected="a Secret key (letters, digits, `-`, `_` and `.`)",
            max_length=253,
        )


def _hub_repo_rules(problems: Problems, name: str) -> None:
    """The Hub refuses these repo ids even though they match the pattern (huggingface_hub's own rules)."""
    path = ("spec", "model", "ref", "name")
    for part in name.split("/"):
        if "--" in part or ".." in part:
            problems.add(
                path, f'must not contain `--` or `..` (the Hub refuses such repository ids), not "{name}"'
            )
            return
        if part[-1] in "-.":
            problems.add(path, f'must not end a name part with `-` or `.`, not "{name}"')
            return
    if name.endswith(".git"):
        problems.add(path, f'must not end with `.git`, not "{name}"')


def _git_ref_rules(problems: Problems, revision: str) -> None:
    """git check-ref-format: what a branch or tag name may not look like."""
    path = ("spec", "model", "ref", "revision")
    broken = (
        ".." in revision
        or "//" in revision
        or revision.endswith(("/", ".", ".lock"))
        or any(part.startswith(".") for part in revision.split("/"))
    )
    if broken:
        problems.add(
            path,
            f"must be a branch, tag or commit name git accepts (no `..` or `//`, no part starting with `.`, "
            f'not ending with `/`, `.` or `.lock`), not "{revision}"',
        )


def _catalog(problems: Problems, model: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
    when = f"{_SRC} `Catalog`"
    if ref is not None:
        problems.one_of(ref, ("spec", "model", "ref", "kind"), CATALOG_KINDS, required=False)
        problems.dns_name(
            ref,
            ("spec", "model", "ref", "name"),
            required=True,
            what=f"the name of a ClusterModel or Model when {when}",
        )
        problems.forbidden(ref, ("spec", "model", "ref", "revision"), when=when)
    problems.forbidden(model, ("spec", "model", "authSecretRef"), when=when)
