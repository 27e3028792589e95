"""Validation of orders: one row per rule, every problem reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.webhook import UNSET, make_catalog_order, make_order
from webhook.validate_order import order_problems


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(make_order(), id="a Hugging Face order with revision and token Secret is valid"),
        pytest.param(
            make_order(spec__model__ref__revision=UNSET, spec__model__authSecretRef=UNSET),
            id="a Hugging Face order with only a repo id is valid",
        ),
        pytest.param(
            make_order(spec__model__ref__revision="5fd5b2ab1ce3e0a8ee5fa7ae2f1e9e41a3f1d3c2"),
            id="a commit hash is a valid revision",
        ),
        pytest.param(
            make_order(spec__model__ref__revision="refs/pr/12"), id="a ref with slashes is a valid revision"
        ),
        pytest.param(make_catalog_order(), id="a Catalog order with a ClusterModel is valid"),
        pytest.param(
            make_catalog_order(spec__model__ref__kind="Model"), id="a Catalog order with a Model is valid"
        ),
        pytest.param(
            make_catalog_order(spec__model__ref__kind=UNSET), id="a Catalog order without kind is valid"
        ),
        pytest.param(
            make_order(spec__inferenceServiceClassName="gpu.large-1"),
            id="a class name with dots is a DNS subdomain",
        ),
        pytest.param(
            make_order(spec__runtime={"image": "x"}),
            id="an unknown field is the mutating webhook's business, not a validation problem",
        ),
    ],
)
def test_a_valid_order_has_no_problems(order: dict[str, Any]) -> None:
    assert order_problems(order) == []


@pytest.mark.parametrize(
    ("order", "problems"),
    [
        pytest.param(
            make_order(spec__model__ref__kind="ClusterModel"),
            ["`spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`"],
            id="ref.kind is refused for a Hugging Face model",
        ),
        pytest.param(
            make_catalog_order(spec__model__ref__revision="main"),
            ["`spec.model.ref.revision`: must not be set when `spec.model.src` is `Catalog`"],
            id="revision is refused for a Catalog model",
        ),
        pytest.param(
            make_catalog_order(spec__model__authSecretRef={"name": "hf-token"}),
            ["`spec.model.authSecretRef`: must not be set when `spec.model.src` is `Catalog`"],
            id="authSecretRef is refused for a Catalog model",
        ),
        pytest.param(
            make_catalog_order(spec__model__ref__kind="Dataset"),
            ['`spec.model.ref.kind`: must be one of `ClusterModel` or `Model`, not "Dataset"'],
            id="a Catalog kind must be ClusterModel or Model",
        ),
        pytest.param(
            make_order(spec__model__ref__name="not-a-repo-id"),
            [
                "`spec.model.ref.name`: must be a Hugging Face repository id `<owner>/<repo>` when `spec.model.src` "
                'is `HuggingFace`, not "not-a-repo-id"'
            ],
            id="a Hugging Face name must be owner/repo",
        ),
        pytest.param(
            make_order(spec__model__ref__name="Qwen/Qwen2.5--Instruct"),
            [
                "`spec.model.ref.name`: must not contain `--` or `..` (the Hub refuses such repository ids), "
                'not "Qwen/Qwen2.5--Instruct"'
            ],
            id="a Hugging Face name must not contain a double dash",
        ),
        pytest.param(
            make_order(spec__model__ref__name="Qwen/model.git"),
            ['`spec.model.ref.name`: must not end with `.git`, not "Qwen/model.git"'],
            id="a Hugging Face name must not end with .git",
        ),
        pytest.param(
            make_order(spec__model__ref__name="Qwen/model-"),
            ['`spec.model.ref.name`: must not end a name part with `-` or `.`, not "Qwen/model-"'],
            id="a Hugging Face name part must not end with a dash",
        ),
        pytest.param(
            make_order(spec__model__ref__revision="main branch"),
            [
                "`spec.model.ref.revision`: must be a branch, tag or commit (letters, digits, `.`, `_`, `-` and `/`), "
                'not "main branch"'
            ],
            id="a revision has no spaces",
        ),
        pytest.param(
            make_order(spec__model__ref__revision="release..1"),
            [
                "`spec.model.ref.revision`: must be a branch, tag or commit name git accepts (no `..` or `//`, no part "
                'starting with `.`, not ending with `/`, `.` or `.lock`), not "release..1"'
            ],
            id="a revision follows git ref rules",
        ),
        pytest.param(
            make_order(spec__inferenceServiceClassName="Default_LLM"),
            [
                "`spec.inferenceServiceClassName`: must be the name of an InferenceServiceClass: a DNS subdomain name "
                '(lower case letters, digits, `-` and `.`), not "Default_LLM"'
            ],
            id="the class name must be a DNS subdomain",
        ),
        pytest.param(
            make_order(spec__inferenceServiceClassName="a" * 254),
            ["`spec.inferenceServiceClassName`: must be at most 253 characters long, not 254"],
            id="the class name is at most 253 characters",
        ),
        pytest.param(
            make_order(spec__inferenceServiceClassName=UNSET),
            ["`spec.inferenceServiceClassName`: is required"],
            id="the class name is required",
        ),
        pytest.param(
            make_order(spec__model=UNSET),
            ["`spec.model`: is required"],
            id="the model is required",
        ),
        pytest.param(
            make_order(spec__model__src="S3"),
            ['`spec.model.src`: must be one of `HuggingFace` or `Catalog`, not "S3"'],
            id="the source must be HuggingFace or Catalog",
        ),
        pytest.param(
            make_order(spec__model__ref=UNSET),
            ["`spec.model.ref`: is required"],
            id="the reference is required",
        ),
        pytest.param(
            make_order(spec__model__authSecretRef={"name": "HF token", "key": "to ken"}),
            [
                "`spec.model.authSecretRef.name`: must be the name of a Secret in the order's namespace: a DNS subdomain "
                'name (lower case letters, digits, `-` and `.`), not "HF token"',
                '`spec.model.authSecretRef.key`: must be a Secret key (letters, digits, `-`, `_` and `.`), not "to ken"',
            ],
            id="the token Secret needs a valid name and key",
        ),
        pytest.param(
            make_catalog_order(spec__model__ref__name="Qwen/Qwen2.5-7B"),
            [
                "`spec.model.ref.name`: must be the name of a ClusterModel or Model when `spec.model.src` is `Catalog`: a "
                'DNS subdomain name (lower case letters, digits, `-` and `.`), not "Qwen/Qwen2.5-7B"'
            ],
            id="a Catalog name is a DNS subdomain",
        ),
        pytest.param(
            {"spec": "gpu please"},
            ['`spec`: must be an object, not "gpu please"'],
            id="a spec that is not an object is refused",
        ),
        pytest.param(
            make_order(spec__model__ref={"kind": "Model", "name": "Qwen/ok", "revision": 7}),
            [
                "`spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`",
                "`spec.model.ref.revision`: must be a string, not 7",
            ],
            id="a wrong type is named with its path",
        ),
    ],
)
def test_an_invalid_order_is_refused_with_its_path(order: dict[str, Any], problems: list[str]) -> None:
    assert order_problems(order) == problems


def test_all_problems_of_an_order_are_reported_at_once() -> None:
    order = make_catalog_order(
        spec__inferenceServiceClassName="Bad Class",
        spec__model__ref__revision="main",
        spec__model__authSecretRef={"name": "hf-token"},
    )
    paths = [p.split(":")[0] for p in order_problems(order)]
    assert paths == [
        "`spec.inferenceServiceClassName`",
        "`spec.model.ref.revision`",
        "`spec.model.authSecretRef`",
    ]
