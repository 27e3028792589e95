"""vLLM's own validation of what we render, for every model of the Hub mirror on every product of the fleet.

For each mirror repository x device profile (H100, A100, A100 MIG, L4: the fleet's node groups,
devtools/cluster/fleet.py), the real planner plans the order with the bundled recipe
(deploy/base/platform/vllm.yaml) on that profile's devices alone, the real renderer renders its
workload, and the runtime container's ``args`` go through the pinned vLLM (tests/runtime/vllm_check.py):
its ``vllm serve`` parser, its ``ModelConfig`` validation with the model's own config files from the
mirror (no weights), and its parallel-config check. A launch vLLM refuses fails its case.

``--model`` names ``/models/model``, the model volume the fetcher fills; here it names a directory
holding the mirror's complete config files of the repository (``config.json``, the sentence-transformers
configs), which is what the validation reads. A case the planner refuses has no launch: it passes and
says so in its id's outcome (the planner's own tests cover its refusals).

``KNOWN``: refusals found and not fixed yet, each with vLLM's exact words; those cases are
``xfail(strict=True)``, so they fail the run once the fix lands and the entry must go.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
from typing import Any

import pytest
import yaml

from controller import render
from controller.config.settings import Settings
from controller.planner import PlanOutcome, plan_order
from controller.planner.vllm import MODEL_PATH
from devtools.cluster import fleet
from devtools.cluster.components.vllm_cpu import VllmEnv
from shared import runtime_images
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe
from testkit.mirror_facts import REPOS, facts_of
from testkit.planner import inventory_of, make_class, make_request

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = pathlib.Path(__file__).with_name("vllm_check.py")
SETTINGS = Settings(hf_endpoint="http://127.0.0.1:9999", model_storage_class="models")
# Whole GPUs and MIG devices, as the bundled class allows them (deploy/base/platform/default-llm.yaml),
# without its parameter-count bound: every model meets every product.
CLASS = make_class(sharingModes=["Exclusive", "MIG"])
PROFILES = {"H100": "gpu-h100", "A100": "gpu-a100", "A100-MIG": "gpu-a100-mig", "L4": "gpu-l4"}
WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".onnx", ".h5", ".ot", ".msgpack")

# (repo, profile) -> vLLM's words. Empty: all-MiniLM-L6-v2's refusal ("User-specified max_model_len
# (512) is greater than the derived max_model_len (max_position_embeddings=256 ...)") went when the
# planner capped the context at max_seq_length of sentence_bert_config.json (ModelFacts.max_seq_length).
KNOWN: dict[tuple[str, str], str] = {}


class KnownRefusalError(AssertionError):
    """vLLM refused a launch with exactly the words of its ``KNOWN`` entry."""


def bundled_recipe() -> InferenceRecipe:
    return InferenceRecipe.model_validate(
        yaml.safe_load((ROOT / "deploy/base/platform/vllm.yaml").read_text())
    )


def profile_outcome(repo_id: str, profile: str) -> PlanOutcome:
    """The planner's answer for the repository on the profile's node group alone, with the bundled recipe."""
    (group,) = [g for g in fleet.FLEET if g.prefix == PROFILES[profile]]
    slices = [fleet.resource_slice(f"{group.prefix}-{i}", group) for i in range(group.count)]
    inventory = inventory_of(slices, classes=fleet.device_classes())
    facts = facts_of(repo_id)
    return plan_order(make_request(inventory, facts, recipes=[bundled_recipe()], class_spec=CLASS))


def an_order(repo_id: str) -> InferenceService:
    return InferenceService.model_validate(
        {
            "apiVersion": "ai.deckhouse.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": "order", "namespace": "team", "uid": "u-1", "generation": 1},
            "spec": {
                "inferenceServiceClassName": "default-llm",
                "model": {"src": "HuggingFace", "ref": {"name": repo_id}},
            },
        }
    )


def runtime_args(repo_id: str, outcome: PlanOutcome) -> list[str]:
    """The ``args`` of the rendered runtime container (the Deployment's, or the LeaderWorkerSet leader's)."""
    assert outcome.plan is not None
    objs = render.workload(an_order(repo_id), outcome.plan, CLASS, SETTINGS, revision="main")
    for obj in objs:
        if obj["kind"] == "Deployment":
            pod = obj["spec"]["template"]["spec"]
        elif obj["kind"] == "LeaderWorkerSet":
            pod = obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
        else:
            continue
        (runtime,) = [c for c in pod["containers"] if c["name"] == "runtime"]
        return list(runtime["args"])
    raise AssertionError(f"no runtime workload among {[o['kind'] for o in objs]}")


def config_files(repo_id: str, into: pathlib.Path) -> pathlib.Path:
    """The repository's complete files but its weights (the mirror serves the config files whole)."""
    for f in REPOS[repo_id].files.values():
        if len(f.head) == f.size and not f.path.endswith(WEIGHTS):
            path = into / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.head)
    return into


@dataclasses.dataclass(frozen=True)
class Case:
    repo: str
    profile: str

    @property
    def id(self) -> str:
        return f"{self.repo}@{self.profile}"


CASES = [Case(repo, profile) for repo in sorted(REPOS) for profile in PROFILES]


def _param(case: Case) -> Any:
    known = KNOWN.get((case.repo, case.profile))
    marks = [pytest.mark.xfail(strict=True, raises=KnownRefusalError, reason=known)] if known else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.fixture(scope="session")
def outcomes() -> dict[str, PlanOutcome]:
    return {c.id: profile_outcome(c.repo, c.profile) for c in CASES}


@pytest.fixture(scope="session")
def verdicts(
    vllm_env: VllmEnv, outcomes: dict[str, PlanOutcome], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, str]]:
    """vLLM's verdict on every planned case, from one run of vllm_check.py in the vLLM environment."""
    models = tmp_path_factory.mktemp("models")
    batch = []
    for case in CASES:
        outcome = outcomes[case.id]
        if not outcome.ok:
            continue
        local = config_files(case.repo, models / case.repo.replace("/", "__"))
        args = [str(local) if a == MODEL_PATH else a for a in runtime_args(case.repo, outcome)]
        batch.append({"id": case.id, "args": args, "env": {}})
    env = {"HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [str(vllm_env.python), str(CHECK)],
        input=json.dumps(batch),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"vllm_check.py failed:\n{proc.stderr[-4000:]}"
    verdicts: dict[str, dict[str, str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(verdicts) == {b["id"] for b in batch}
    return verdicts


def test_every_mirror_model_meets_every_product(outcomes: dict[str, PlanOutcome]) -> None:
    assert len(CASES) == len(REPOS) * len(PROFILES)
    for profile in PROFILES:  # each profile serves something, so its cases exercise vLLM
        assert any(outcomes[c.id].ok for c in CASES if c.profile == profile), profile
    assert runtime_images.pinned().image == bundled_recipe().spec.image


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_vllm_accepts_the_rendered_launch(
    case: Case, outcomes: dict[str, PlanOutcome], verdicts: dict[str, dict[str, str]]
) -> None:
    outcome = outcomes[case.id]
    if not outcome.ok:
        # No launch to check: the planner refused (its own tests cover why).
        assert outcome.reason and outcome.message
        return
    verdict = verdicts[case.id]
    if verdict["stage"] == "accepted":
        return
    known = KNOWN.get((case.repo, case.profile))
    if known is not None and known in verdict["message"]:
        raise KnownRefusalError(verdict["message"])
    pytest.fail(
        f"vLLM {runtime_images.PINNED} refuses the launch at its {verdict['stage']}: {verdict['message']}"
    )
