"""devtools/product/controller.py, the one copy of the controller's process handling, against a stand-in
``controller`` package that serves ``/readyz`` and ``/metrics`` on the ports it is given."""

from __future__ import annotations

import gc
import os
import pathlib
import sys

import pytest

from devtools import procs
from devtools.product.controller import ControllerProcess

FAKE = """
import argparse, http.server, sys, time
p = argparse.ArgumentParser()
for flag in ("--kubeconfig", "--namespace", "--settings-configmap", "--metrics-port", "--health-port", "--bind-address"):
    p.add_argument(flag)
p.add_argument("--no-leader-elect", action="store_true")
p.add_argument("--workers")
a = p.parse_args()
if a.workers == "exit":
    sys.exit(3)
print("argv", " ".join(sys.argv[1:]), flush=True)

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"inference_controller_leader 1.0\\n" if self.path == "/metrics" else b"ok"
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass

import threading
threading.Thread(target=http.server.HTTPServer(("127.0.0.1", int(a.metrics_port)), H).serve_forever, daemon=True).start()
time.sleep(0.3)
http.server.HTTPServer(("127.0.0.1", int(a.health_port)), H).serve_forever()
"""


@pytest.fixture
def fake(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "controller").mkdir()
    (tmp_path / "controller" / "__main__.py").write_text(FAKE)
    return tmp_path


def process(fake: pathlib.Path, **kw: object) -> ControllerProcess:
    return ControllerProcess(
        kubeconfig=fake / "kubeconfig",
        env={**os.environ, "PYTHONPATH": str(fake)},  # this stand-in, not the real controller
        log_dir=fake / "logs",
        cwd=fake,
        python=sys.executable,
        ready_timeout=30,
        **kw,  # type: ignore[arg-type]
    )


def test_it_starts_until_ready_serves_metrics_and_restarts_with_a_new_log(fake: pathlib.Path) -> None:
    c = process(fake, args=("--no-leader-elect", "--workers", "2"))
    assert c.start() > 0
    assert c.ready()
    assert "inference_controller_leader 1.0" in c.metrics()
    first = c.proc
    assert first is not None
    log = (fake / "logs" / "controller-1.log").read_text()
    assert (
        f"--namespace d8-inference --settings-configmap inference-settings --no-leader-elect --workers 2 --metrics-port {c.metrics_port}"
        in log
    )

    c.restart()  # SIGKILL, then a new process on new ports
    assert first.returncode is not None, "the killed process is reaped"
    assert c.proc is not first and c.ready()
    assert (fake / "logs" / "controller-2.log").exists()

    c.stop()
    assert c.proc is not None and c.proc.returncode is not None
    assert procs.running("controller", state=fake / "logs") is None
    gc.collect()  # a dropped Popen or log handle would warn, and warnings are errors


def test_fixed_ports_and_one_log(fake: pathlib.Path) -> None:
    ports = (procs.free_port(), procs.free_port())
    c = process(fake, ports=ports, log_each_start=False)
    c.start()
    try:
        assert (c.metrics_port, c.health_port) == ports
        assert (fake / "logs" / "controller.log").exists()
    finally:
        c.stop()


def test_a_process_that_exits_fails_the_start_with_its_log(fake: pathlib.Path) -> None:
    c = process(fake, args=("--workers", "exit"))
    with pytest.raises(procs.ProcessError, match="controller exited"):
        c.start()
    c.stop()
