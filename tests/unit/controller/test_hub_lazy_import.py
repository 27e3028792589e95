"""Starting the controller does not import huggingface_hub: only a call that needs the Hub does."""

from __future__ import annotations

import subprocess
import sys

from controller.modelhub import errors as hub_errors
from controller.modelhub import exceptions as hub_exceptions


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_the_controller_starts_without_huggingface_hub() -> None:
    loaded = _modules_after(
        "import controller.__main__\nfrom controller.modelhub.client import HubClient\nHubClient(endpoint='http://127.0.0.1:9')"
    )
    assert "controller.manager" in loaded
    assert "huggingface_hub" not in loaded
    assert "httpx2" not in loaded


def test_the_first_hub_request_imports_it() -> None:
    loaded = _modules_after(
        "from controller.modelhub.client import HubClient\nHubClient(endpoint='http://127.0.0.1:9')._requests"
    )
    assert "huggingface_hub" in loaded


def test_the_errors_module_raises_the_same_classes() -> None:
    assert hub_errors.ModelNotFound is hub_exceptions.ModelNotFound
    assert hub_errors.ModelAccessDenied is hub_exceptions.ModelAccessDenied
    assert hub_errors.ModelSourceUnavailable is hub_exceptions.ModelSourceUnavailable
