"""``python -m bench.zero [--wakes N] [--idle S]``

One order of a tiny chat model on real vLLM (the plane runner), in a class with ``minReplicas: 0`` and
``scaleToZeroAfterSeconds: S`` (default 30), on the local plane with Prometheus, KEDA and the activator
(started when down). After the order is Ready, ``N`` times (default 3): wait until it runs no pod and
holds no device (and its Service points at the activator), then send one streamed chat request with its token through the entry address and time
it to its first byte and to its whole answer. Before the first wake, a request without the token must
get 401 and leave the order at zero. Every second it samples the devices the order's claims hold.

After the last wake it returns to zero and stays there ``--quiet`` seconds (default 300), an idle
stretch. Prints one JSON line (bench/zero/figures.py): the seconds from each wake-up request to its
first byte and answer, the seconds from the last answer to zero, and the device-seconds held over the
run (from Ready to the end of the quiet stretch) against an order that keeps one replica
(the saving).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

from bench.chaos.stack import installed_plane
from bench.zero.figures import Sample, Wake, figures
from devtools import tiny_models
from devtools.wait import wait_for
from testkit.platform import hf, running_platform
from testkit.zero import allocated_devices, at_zero, timed_request

NS = "bench-zero"
ORDER = "tiny"


def log(text: str) -> None:
    print(f"[zero] {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(prog="python -m bench.zero", description=__doc__)
    a.add_argument("--wakes", type=int, default=3)
    a.add_argument("--idle", type=int, default=30, help="the class's scaleToZeroAfterSeconds")
    a.add_argument("--quiet", type=float, default=300, help="seconds left at zero after the last wake")
    args = a.parse_args(argv)
    cluster, kubectl, api = installed_plane()
    model = tiny_models.CHAT.repo_id
    wakes: list[Wake] = []
    to_zero: list[float] = []
    samples: list[Sample] = []
    with running_platform(cluster, kubectl, api, real_runtime=True, autoscaling=True, activator=True) as p:
        kubectl("create", "namespace", NS, check=False)
        stop = threading.Event()
        try:
            klass = p.create_class(
                {"scaling": {"minReplicas": 0, "maxReplicas": 1, "scaleToZeroAfterSeconds": args.idle}},
                prefix="zero",
            )
            applied = time.monotonic()
            p.create_order(NS, ORDER, hf(model), klass=klass)
            p.wait_phase(NS, ORDER, "Ready", timeout=900)
            log(f"order Ready {time.monotonic() - applied:.0f} s after the apply")
            target = p.target(NS, ORDER)
            stranger = p.target(NS, ORDER, token="not-the-token")
            host = target.host

            def sampler() -> None:
                while not stop.is_set():
                    samples.append(Sample(time.monotonic(), allocated_devices(p, NS, ORDER)))
                    stop.wait(1)

            start = time.monotonic()
            threading.Thread(target=sampler, daemon=True).start()
            body: dict[str, Any] = {
                "model": model,
                "messages": [{"role": "user", "content": "say hi"}],
                "max_tokens": 8,
                "stream": True,
            }
            last = time.monotonic()
            for i in range(args.wakes):
                wait_for(
                    lambda: at_zero(p, NS, ORDER), bool, timeout=args.idle + 600, message="the order at zero"
                )
                to_zero.append(time.monotonic() - last)
                log(f"at zero {to_zero[-1]:.0f} s after the last answer")
                if i == 0:
                    refused = timed_request(stranger, body, timeout=30)
                    time.sleep(20)
                    log(f"without the token: {refused.status}; still at zero: {at_zero(p, NS, ORDER)}")
                    if refused.status != 401 or not at_zero(p, NS, ORDER):
                        raise SystemExit("a request without the token was not refused, or it woke the order")
                own = len([r for r in p.runtime.requests() if r.get("host") == host])
                answer = timed_request(target, body)
                last = time.monotonic()
                status: int | str = answer.status
                if len([r for r in p.runtime.requests() if r.get("host") == host]) > own:
                    status = "stand-in"  # not a wake: the stand-in answered for the real runtime
                    log(f"the stand-in answered itself; forwarded: {p.runtime.forwarded()[-5:]}")
                wakes.append(Wake(status, answer.first_byte_s, answer.total_s))
                log(
                    f"wake {i + 1}: {answer.status}, first byte {answer.first_byte_s:.1f} s, answer {answer.total_s:.1f} s"
                )
            wait_for(
                lambda: at_zero(p, NS, ORDER), bool, timeout=args.idle + 600, message="the order at zero"
            )
            to_zero.append(time.monotonic() - last)
            log(f"at zero {to_zero[-1]:.0f} s after the last answer; quiet for {args.quiet:.0f} s")
            time.sleep(args.quiet)
            end = time.monotonic()
        finally:
            stop.set()
            p.delete_namespace_and_wait(NS)
    result = figures(samples, start=start, end=end, devices_per_replica=1, wakes=wakes, to_zero_s=to_zero)
    result.update({"idle_s": args.idle, "model": model})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
