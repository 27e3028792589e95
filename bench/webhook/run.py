"""Webhook benchmark: AdmissionReviews per second and p50/p99 latency over TLS, one uvicorn worker,
side by side in the same run with the floor of the stack (``bench.webhook.floor``: a bare uvicorn
ASGI app over the same TLS answering a constant AdmissionReview).

    .venv/bin/python -m bench.webhook.run [--concurrency 8] [--seconds 5] [--rounds 3]

Slices of a few seconds alternate between the floor and the webhook at fixed concurrency (closed
loop), so both see the same neighbours on a shared machine; the medians over slices are reported,
with the ratio. Then the webhook (and the floor, for reference) is driven open loop at half the
webhook's median peak rate, again in alternating slices, and the median p50/p99 reported with the
range of the slices' p99. Requests are a valid
order's AdmissionReview on /validate-inferenceservice and, separately, /mutate-inferenceservice.
The load generator runs in this process, on the same machine: the figures are for this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import os
import pathlib
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from bench.webhook.load import Result, closed_loop, http_request, open_loop
from devtools import procs
from devtools.local_pki import ServingPki, make_serving_pki
from testkit.webhook import make_order, make_review

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, run: Coroutine[Any, Any, Result]) -> Result:
    """``run`` with the server's CPU time over it."""
    before = cpu_seconds(pid)
    result = asyncio.run(run)
    return dataclasses.replace(result, server_cpu=cpu_seconds(pid) - before)


@contextmanager
def serving(module: str, pki: ServingPki) -> Iterator[tuple[int, int]]:
    port = procs.free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--cert-file",
            str(pki.cert_file),
            "--key-file",
            str(pki.key_file),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        context = ssl.create_default_context(cafile=str(pki.ca_file))
        for _ in range(300):
            try:
                with (
                    socket.create_connection(("127.0.0.1", port), timeout=1) as raw,
                    context.wrap_socket(raw, server_hostname="127.0.0.1"),
                ):
                    break
            except OSError:
                time.sleep(0.1)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _line(name: str, results: list[Result]) -> str:
    rates = [r.rate for r in results]
    p50 = statistics.median(r.percentile(50) for r in results) * 1e3
    p99s = sorted(r.percentile(99) * 1e3 for r in results)
    return (
        f"{name:<36} {statistics.median(rates):>7.0f} req/s   p50 {p50:5.2f} ms   "
        f"p99 {statistics.median(p99s):6.2f} ms (slices {p99s[0]:.1f}..{p99s[-1]:.1f})   "
        f"errors {sum(r.errors for r in results)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook.run")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measured slice")
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument(
        "--rounds", type=int, default=5, help="slices per server, floor and webhook alternating"
    )
    parser.add_argument(
        "--path",
        default="/validate-inferenceservice",
        choices=["/validate-inferenceservice", "/mutate-inferenceservice"],
    )
    args = parser.parse_args()

    review = make_review(make_order())
    body = json.dumps(review).encode()
    payload = http_request(args.path, body)
    floors: list[Result] = []
    hooks: list[Result] = []
    floors_half: list[Result] = []
    hooks_half: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        pki = make_serving_pki(tmp, now=dt.datetime.now(dt.UTC))
        client = ssl.create_default_context(cafile=str(pki.ca_file))
        with serving("bench.webhook.floor", pki) as floor, serving("webhook", pki) as hook:
            (floor_port, floor_pid), (hook_port, hook_pid) = floor, hook
            _check_answer(hook_port, client, args.path, body)
            for _ in range(args.rounds):
                for port, pid, results in ((floor_port, floor_pid, floors), (hook_port, hook_pid, hooks)):
                    run = closed_loop(
                        port,
                        client,
                        payload,
                        concurrency=args.concurrency,
                        seconds=args.seconds,
                        warmup=args.warmup,
                    )
                    results.append(measured(pid, run))
            half = statistics.median(r.rate for r in hooks) / 2
            for _ in range(args.rounds):
                for port, results in ((hook_port, hooks_half), (floor_port, floors_half)):
                    run = open_loop(
                        port, client, payload, rate=half, seconds=args.seconds, connections=args.concurrency
                    )
                    results.append(asyncio.run(run))
    ratios = [h.rate / f.rate for f, h in zip(floors, hooks, strict=True)]
    print(
        f"webhook benchmark: POST {args.path} (a valid order), TLS 1.3, one uvicorn worker each; closed loop at "
        f"concurrency {args.concurrency}, {args.rounds} x {args.seconds:.0f} s slices alternating floor and "
        f"webhook; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(_line("floor (bare ASGI), peak", floors))
    print(_line("webhook, peak", hooks))
    print(
        f"{'ratio webhook / floor':<36} {statistics.median(r.rate for r in hooks) / statistics.median(r.rate for r in floors):>7.0%}"
        f"         (per slice pair: {', '.join(f'{r:.0%}' for r in ratios)})"
    )
    floor_cpu, hook_cpu = _cpu_per_request(floors), _cpu_per_request(hooks)
    print(
        f"{'server CPU per admission':<36} floor {floor_cpu * 1e6:.0f} us, webhook {hook_cpu * 1e6:.0f} us: "
        f"on an otherwise idle core the webhook would serve {floor_cpu / hook_cpu:.0%} of the floor's rate"
    )
    print(_line(f"webhook at half peak ({half:.0f}/s)", hooks_half))
    print(_line(f"floor at the same rate ({half:.0f}/s)", floors_half))
    return 0


def _cpu_per_request(results: list[Result]) -> float:
    return statistics.median(r.server_cpu / r.sent for r in results)


def _check_answer(port: int, context: ssl.SSLContext, path: str, body: bytes) -> None:
    import httpx

    with httpx.Client(verify=context) as c:
        answer = c.post(f"https://127.0.0.1:{port}{path}", content=body).json()["response"]
    assert answer["allowed"] is True, answer


if __name__ == "__main__":
    sys.exit(main())
