"""The demo's pure helpers: progress lines, when to stop waiting, local webhook registration, the curl."""

from __future__ import annotations

import base64
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from devtools import procs
from hack.demo.order import chain_summary, curl_command, outcome, shown
from standins import local_webhook


def make_order(
    *, phase: str | None = None, conditions: list[dict[str, str]] | None = None, **changes: Any
) -> Any:
    obj: dict[str, Any] = {"metadata": {"name": "support-llm", "namespace": "support", "generation": 1}}
    status: dict[str, Any] = {"observedGeneration": 1}
    if phase is not None:
        status["phase"] = phase
    if conditions is not None:
        status["conditions"] = conditions
    obj["status"] = status
    obj.update(changes)
    return obj


def cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


CHAIN_TRUE = [cond(t, "True", "Resolved") for t in ("ClassResolved", "ModelResolved")]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        pytest.param(
            make_order(status={}), "(no status yet): ClassResolved not reported yet", id="no status yet"
        ),
        pytest.param(
            make_order(
                phase="Pending",
                conditions=[*CHAIN_TRUE, cond("Planned", "False", "NoCapacity", "no H100 is free")],
            ),
            "Pending: Planned=False NoCapacity - no H100 is free",
            id="the first condition that is not True is shown with its message",
        ),
        pytest.param(
            make_order(
                phase="Pending",
                conditions=[
                    *CHAIN_TRUE,
                    cond("Planned", "True", "Planned"),
                    cond("WorkloadReady", "Unknown", "Progressing"),
                ],
            ),
            "Pending: WorkloadReady=Unknown Progressing",
            id="an unknown condition without a message",
        ),
        pytest.param(
            make_order(
                phase="Ready",
                conditions=[
                    *CHAIN_TRUE,
                    cond("Planned", "True", "Planned"),
                    cond("WorkloadReady", "True", "Available"),
                    cond("Ready", "True", "Serving"),
                ],
            ),
            "Ready: Ready=True Serving",
            id="a ready order",
        ),
    ],
)
def test_progress_names_the_phase_and_the_condition_holding_the_order(order: Any, expected: str) -> None:
    assert chain_summary(order) == expected


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        pytest.param(make_order(phase="Ready"), "ready", id="Ready ends the wait"),
        pytest.param(make_order(phase="Degraded"), "ready", id="Degraded serves, so it ends the wait too"),
        pytest.param(make_order(phase="Failed"), "failed", id="Failed ends the wait as a failure"),
        pytest.param(make_order(phase="Pending"), None, id="Pending keeps waiting"),
        pytest.param(
            make_order(phase="Ready", metadata={"name": "x", "namespace": "y", "generation": 2}),
            None,
            id="a status of an older generation keeps waiting",
        ),
    ],
)
def test_the_wait_ends_on_ready_degraded_or_failed_of_the_current_generation(
    order: Any, expected: str | None
) -> None:
    assert outcome(order) == expected


def test_local_registration_points_deploys_rules_at_a_url_with_our_ca() -> None:
    confs = local_webhook.configurations(base_url="https://127.0.0.1:9443/", ca_bundle=b"PEM")
    assert {c["kind"] for c in confs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for conf in confs:
        for hook in conf["webhooks"]:
            assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
            assert hook["clientConfig"]["caBundle"] == base64.b64encode(b"PEM").decode()
            assert hook["failurePolicy"] == "Fail"


def test_the_curl_keeps_the_endpoint_name_and_only_redirects_the_connection() -> None:
    cmd = curl_command(
        "https://support-llm.support.svc",
        token="s3cret",
        ca_file=pathlib.Path("/ca.crt"),
        address="127.0.0.1:40123",
    )
    assert cmd == [
        "curl", "-sS", "--cacert", "/ca.crt", "--connect-to", "support-llm.support.svc:443:127.0.0.1:40123",
        "-H", "Authorization: Bearer s3cret", "https://support-llm.support.svc/v1/models",
    ]  # fmt: skip
    assert "s3cret" not in shown(cmd, "s3cret")
    assert '"Authorization: Bearer $TOKEN"' in shown(cmd, "s3cret")


def test_the_curl_of_a_class_without_authentication_sends_no_header() -> None:
    cmd = curl_command(
        "https://x.y.svc:8443/", token=None, ca_file=pathlib.Path("/ca"), address="127.0.0.1:1"
    )
    assert "-H" not in cmd
    assert "x.y.svc:8443:127.0.0.1:1" in cmd
    assert cmd[-1] == "https://x.y.svc:8443/v1/models"


def test_the_curl_of_a_tiny_order_asks_for_a_chat_completion_of_its_model() -> None:
    cmd = curl_command(
        "https://tiny-chat.support.svc",
        token="t",
        ca_file=pathlib.Path("/ca"),
        address="127.0.0.1:1",
        chat="o/m",
    )
    assert cmd[-1] == "https://tiny-chat.support.svc/v1/chat/completions"
    body = json.loads(cmd[cmd.index("-d") + 1])
    assert body["model"] == "o/m" and body["messages"][0]["role"] == "user" and body["max_tokens"] > 0
    assert "Content-Type: application/json" in cmd and "Authorization: Bearer t" in cmd


def test_a_background_process_is_tracked_waited_for_and_stopped(tmp_path: pathlib.Path) -> None:
    script = "import time; print('listening on 127.0.0.1:5555', flush=True); time.sleep(60)"
    bg = procs.start("sleeper", [sys.executable, "-c", script], state=tmp_path, cwd=tmp_path)
    match = procs.wait_for_line(bg, r"listening on (\S+)", timeout=30)
    assert match.group(1) == "127.0.0.1:5555"
    assert procs.running("sleeper", state=tmp_path) == bg.pid
    assert procs.stop("sleeper", state=tmp_path) is True
    assert bg.process is not None
    assert bg.process.wait(timeout=30) != 0, "ended by a signal"
    assert procs.running("sleeper", state=tmp_path) is None
    assert procs.stop("sleeper", state=tmp_path) is False, "stopping twice is a no-op"


def test_a_pid_file_of_someone_elses_process_is_never_signalled(tmp_path: pathlib.Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "x.pid").write_text(f"{other.pid}\n")
        (tmp_path / "x.cmd").write_text("something we started")
        assert procs.running("x", state=tmp_path) is None
        assert procs.stop("x", state=tmp_path) is False
        assert other.poll() is None, "still running"
    finally:
        other.terminate()
        other.wait()


def test_a_process_that_exits_early_is_reported_with_its_log(tmp_path: pathlib.Path) -> None:
    bg = procs.start(
        "crash", [sys.executable, "-c", "print('boom'); raise SystemExit(3)"], state=tmp_path, cwd=tmp_path
    )
    assert bg.process is not None
    bg.process.wait(timeout=30)
    with pytest.raises(procs.ProcessError, match="boom"):
        procs.wait_for_line(bg, r"never printed", timeout=30)
