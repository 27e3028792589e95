"""``python -m bench.activator_fuzz [--clients N] [--seconds S] [--seed K]``: the activator under a
storm of malformed and slow clients, measured.

Starts the activator as its own process (``bench.activator_fuzz.serve``: ``activator.app.Activator``
with the product's settings parser and ``OrderBook``, fed from files instead of a Kubernetes API)
with small bounds (``BOUNDS``), for two orders, ``chat.team`` and ``embed.team``, scaled to zero.
Then, for ``S`` seconds, ``N`` concurrent clients each open one connection after another, of a kind
chosen at random (``bench.activator_fuzz.clients.KINDS``): malformed heads, slowloris heads and slow
bodies (a byte a second), oversized heads and bodies, valid requests held until they time out (503)
or are forwarded, valid requests that leave mid-hold, wrong tokens, unknown SNI, dropped
connections. Half way, ``chat.team`` gets a ready upstream (a small HTTPS server in this process);
``embed.team`` never does.

Prints one JSON line: outcomes (by outcome and by kind), answers per second, whether the process
is alive and the ``Traceback``s in its log, the held gauge per order and the hold ledger's total
at the end (from ``/metrics``), the connections the activator still counts open and the TCP
sockets it still has on its port, and its RSS (``VmRSS``, sampled every 0.5 s) at start, peak and
end. Exit status 1 on a crash (the process died or logged a Traceback), a leaked hold (ledger or
gauge not 0 once every client is done), a connection left open, a hang (a client with neither
answer nor close within its patience), a wrong token not answered 401, or a peak RSS beyond
``--max-rss-mib``.

The RSS bound (default 512 MiB) is a ceiling, not a leak test: the process starts near 55 MiB, and
each connection that sends a body with the token keeps it whole (up to ``max_body_bytes``, 1 MiB
here, twice while it is joined) until it is answered; about a tenth of the clients send such
bodies. glibc keeps the high-water mark of those buffers (freed 1 MiB blocks raise its mmap
threshold, so later ones come from the heap), so the RSS climbs by steps to a plateau and does not
come back down when the storm ends. Whether anything is kept after the storm is the unit test's
question (``tests/unit/activator/test_fuzz_concurrent.py``, with tracemalloc).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.activator_fuzz.clients import KINDS, Target, storm, tcp_sockets
from devtools.pki import cert_pem, key_pem, new_ca, new_leaf
from shared import names

ORDERS = (("team", "chat"), ("team", "embed"))
WAKES = ("team", "chat")
TOKEN = "fuzz-token"
BOUNDS = {
    "max_hold_seconds": 5,
    "header_timeout_seconds": 2,
    "body_timeout_seconds": 3,
    "max_held_per_order": 16,
    "max_held_total": 64,
    "max_connections": 512,
    "max_header_bytes": 16384,
    "max_body_bytes": 1 << 20,
    "retry_after_seconds": 5,
    "upstream_poll_seconds": 0.1,
    "upstream_retry_seconds": 0.5,
}
ALLOWED = {
    "malformed": {"200", "400", "401", "408", "413", "431", "503", "closed", "left"},
    "slowloris": {"closed"},
    "slow-body": {"408", "closed"},
    "big-head": {"431"},
    "big-body": {"401", "413", "closed"},
    "held": {"200", "503"},
    "leaver": {"left", "200", "503"},
    "wrong-token": {"401"},
    "unknown-sni": {"handshake-refused"},
    "drop": {"left"},
}
"""The outcomes each kind may see; anything else is listed under ``unexpected``. A slow body may see
``closed`` rather than its 408: the activator answers and closes while the client's next byte is on
its way, the close with unread data resets the connection, and Linux drops an answer the client had
not read yet. A big body likewise, when the reset comes before the client reads its 413 or 401."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_of(namespace: str, name: str) -> str:
    return f"{name}.{namespace}.svc"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def objects(ca: Any, ca_key: Any) -> list[dict[str, Any]]:
    """The orders' ``-tls`` and ``-auth`` Secrets as the API would list them."""
    out: list[dict[str, Any]] = []
    for i, (namespace, name) in enumerate(ORDERS):
        host = host_of(namespace, name)
        cert, key = new_leaf(
            ca, ca_key, common_name=host, hosts=(host,), server=True, now=dt.datetime.now(dt.UTC), days=1
        )
        labels = {names.LABEL_ORDER: name}
        out.append(
            {
                "metadata": {
                    "name": names.tls_secret(name),
                    "namespace": namespace,
                    "labels": labels,
                    "resourceVersion": str(i + 1),
                },
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": _b64(cert_pem(cert)), "tls.key": _b64(key_pem(key))},
            }
        )
        out.append(
            {
                "metadata": {"name": names.auth_secret(name), "namespace": namespace, "labels": labels},
                "data": {names.AUTH_TOKEN_KEY: _b64(TOKEN.encode())},
            }
        )
    return out


def endpoint_slice(namespace: str, name: str, port: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{name}-fuzz",
            "namespace": namespace,
            "labels": {
                names.LABEL_ORDER: name,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "https", "port": port}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
    }


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A replica: reads one request, answers 200."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        await reader.readexactly(length)
        body = b'{"ok": true}'
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        await writer.drain()
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass
class RssSampler:
    pid: int
    every: float = 0.5
    samples: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.samples.append(rss_kib(self.pid))
            except (FileNotFoundError, ProcessLookupError):
                return

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


def metrics(admin_port: int) -> dict[str, float]:
    """``name{label=value,...}`` -> value of every sample on ``/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def _ready(admin_port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the activator exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the activator did not get ready")


async def run(
    *,
    clients: int,
    seconds: float,
    seed: int,
    max_rss_mib: float,
    work: Path,
    trickle: float,
    kinds: tuple[str, ...] = KINDS,
) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    ca, ca_key = new_ca("activator fuzz CA", now=now, days=1)
    (work / "ca.pem").write_bytes(cert_pem(ca))
    (work / "secrets.json").write_text(json.dumps(objects(ca, ca_key)))
    hosts = tuple(host_of(ns, n) for ns, n in ORDERS)
    up_cert, up_key = new_leaf(ca, ca_key, common_name=hosts[0], hosts=hosts, server=True, now=now, days=1)
    (work / "up.crt").write_bytes(cert_pem(up_cert))
    (work / "up.key").write_bytes(key_pem(up_key))
    up_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    up_context.load_cert_chain(work / "up.crt", work / "up.key")
    upstream = await asyncio.start_server(_upstream, "127.0.0.1", 0, ssl=up_context, backlog=1024)
    up_port = int(upstream.sockets[0].getsockname()[1])

    port, admin_port = free_port(), free_port()
    argv = [
        sys.executable,
        "-m",
        "bench.activator_fuzz.serve",
        "--objects",
        str(work),
        "--upstream-ca-file",
        str(work / "ca.pem"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--admin-host",
        "127.0.0.1",
        "--admin-port",
        str(admin_port),
    ]
    for k, v in BOUNDS.items():
        argv += ["--" + k.replace("_", "-"), str(v)]
    log_path = work / "activator.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        _ready(admin_port, proc)
        start_rss = rss_kib(proc.pid)
        sampler = RssSampler(proc.pid)
        sampler.start()

        async def wake() -> None:
            (work / "slices.json").write_text(json.dumps([endpoint_slice(*WAKES, up_port)]))

        target = Target(
            port=port,
            ca=ssl.create_default_context(cadata=cert_pem(ca).decode()),
            orders=hosts,
            token=TOKEN,
            header_timeout=float(BOUNDS["header_timeout_seconds"]),
            body_timeout=float(BOUNDS["body_timeout_seconds"]),
            max_hold=float(BOUNDS["max_hold_seconds"]),
            max_header_bytes=int(BOUNDS["max_header_bytes"]),
            max_body_bytes=int(BOUNDS["max_body_bytes"]),
            trickle=trickle,
        )
        t0 = time.monotonic()
        tally = await storm(target, clients=clients, seconds=seconds, seed=seed, kinds=kinds, at_half=wake)
        elapsed = time.monotonic() - t0
        # every client is done; what the activator still holds or counts open now is a leak
        # (its own closing of the last connections may lag a moment: give it 5 s)
        settle_deadline = time.monotonic() + 5
        while True:
            m = metrics(admin_port)
            quiet = (
                m.get("bench_activator_holds_total") == 0 and m.get("bench_activator_connections_open") == 0
            )
            if quiet or time.monotonic() > settle_deadline:
                break
            await asyncio.sleep(0.2)
        settled = round(5 - max(0.0, settle_deadline - time.monotonic()), 1)
        sockets = tcp_sockets(port)
        alive = proc.poll() is None
        end_rss = rss_kib(proc.pid) if alive else 0
        sampler.stop()
    finally:
        upstream.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    log_text = log_path.read_text(errors="replace")
    held_gauge = {
        k.split("{", 1)[1].rstrip("}"): v
        for k, v in m.items()
        if k.startswith("inference_activator_requests_held{")
    }
    refused = {
        k.split("reason=", 1)[1].rstrip("}"): int(v)
        for k, v in m.items()
        if k.startswith("inference_activator_requests_refused_total{")
    }
    holds = {
        k.split("outcome=", 1)[1].rstrip("}"): int(v)
        for k, v in m.items()
        if k.startswith("inference_activator_hold_seconds_count{")
    }
    unexpected = {
        f"{kind}/{outcome}": n
        for kind, outcomes in tally.by_kind().items()
        for outcome, n in outcomes.items()
        if outcome not in ALLOWED[kind]
    }
    peak = max([start_rss, end_rss, *sampler.samples])
    figures: dict[str, Any] = {
        "clients": clients,
        "seconds": seconds,
        "seed": seed,
        "kinds": list(kinds),
        "bounds": BOUNDS,
        "connections": sum(tally.outcomes.values()),
        "answers": tally.answers,
        "answers_per_second": round(tally.answers / elapsed, 1),
        "outcomes": tally.by_outcome(),
        "by_kind": tally.by_kind(),
        "unexpected": unexpected,
        "hangs": tally.hangs,
        "alive": alive,
        "exit_code_after_sigterm": proc.returncode,
        "tracebacks": log_text.count("Traceback"),
        "held_gauge_end": held_gauge,
        "holds_ledger_end": m.get("bench_activator_holds_total"),
        "connections_open_end": m.get("bench_activator_connections_open"),
        "tcp_sockets_end": sockets,
        "settled_after_seconds": settled,
        "hold_outcomes": holds,
        "refused": refused,
        "wakeups": {
            k.split("{", 1)[1].rstrip("}"): int(v)
            for k, v in m.items()
            if k.startswith("inference_activator_wakeups_total{")
        },
        "forward_errors": int(m.get("inference_activator_forward_errors_total", 0)),
        "rss_mib": {
            "start": round(start_rss / 1024, 1),
            "peak": round(peak / 1024, 1),
            "end": round(end_rss / 1024, 1),
            "samples": len(sampler.samples),
            "every_5s": [round(k / 1024) for k in sampler.samples[::10]],
        },
        "max_rss_mib": max_rss_mib,
        "log": str(log_path),
    }
    leaks = (
        any(v != 0 for v in held_gauge.values())
        or m.get("bench_activator_holds_total") != 0
        or m.get("bench_activator_connections_open") != 0
        or sockets.get("established", 0) + sockets.get("close_wait", 0) > 0
    )
    wrong_token_let_in = sum(
        n for outcome, n in tally.by_kind().get("wrong-token", {}).items() if outcome in ("200", "503")
    )
    figures["failures"] = [
        why
        for why, bad in (
            ("crash", not alive or figures["tracebacks"] > 0),
            ("leak", leaks),
            ("hang", tally.hangs > 0),
            ("wrong token let in", wrong_token_let_in > 0),
            ("rss", peak / 1024 > max_rss_mib),
        )
        if bad
    ]
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.activator_fuzz", description=__doc__)
    p.add_argument("--clients", type=int, default=300)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trickle", type=float, default=1.0, help="seconds between two bytes of a slow client")
    p.add_argument("--max-rss-mib", type=float, default=512)
    p.add_argument("--keep", action="store_true", help="keep the work directory (the activator's log)")
    p.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help="the client kinds to draw from, comma-separated (default: all): e.g. slowloris alone "
        "measures what an open connection costs",
    )
    args = p.parse_args(argv)
    unknown = set(args.kinds.split(",")) - set(KINDS)
    if unknown:
        p.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    work = Path(tempfile.mkdtemp(prefix="activator-fuzz-"))
    figures = asyncio.run(
        run(
            clients=args.clients,
            seconds=args.seconds,
            seed=args.seed,
            max_rss_mib=args.max_rss_mib,
            work=work,
            trickle=args.trickle,
            kinds=tuple(k for k in args.kinds.split(",") if k),
        )
    )
    print(json.dumps(figures))
    if not args.keep and not figures["failures"]:
        for f in work.iterdir():
            f.unlink()
        os.rmdir(work)
    return 1 if figures["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
