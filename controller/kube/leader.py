"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it.

A candidate takes the Lease when it is free, released (no holder) or expired. Expiry is judged by this
process's own monotonic clock from the moment it last saw the record change, never by comparing wall
clocks across machines. Every write carries the resourceVersion it read, so two candidates racing for
the Lease cannot both win: the loser gets a 409 and tries again later.

The leader renews every ``retry_period``; if it cannot renew for ``renew_deadline`` (shorter than
``lease_duration``), it stops leading before anyone else may take over. ``stop()`` releases the Lease
(no holder, 1 s duration), so a successor takes over at its next retry instead of waiting for expiry.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from controller.kube.client import ApiClient, path_for, request, resource_for
from controller.kube.errors import AlreadyExists, Conflict, KubeError, NotFound

log = logging.getLogger(__name__)

LEASE = resource_for("coordination.k8s.io/v1", "Lease")
JITTER = 1.2


def _now() -> datetime:
    return datetime.now(UTC)


def micro_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = _now,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.api_client = api_client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self._clock = clock
        self._wall = wall_clock
        self._stop = threading.Event()
        self._release_on_stop = True
        self._leading = threading.Event()
        self._thread: threading.Thread | None = None
        self._observed: dict[str, Any] | None = None  # the Lease spec last seen
        self._observed_at = 0.0  # when (own clock) it last changed
        self._path = path_for(LEASE, namespace=namespace, name=name)

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name=f"leader-{self.name}", daemon=True)
            self._thread.start()

    def stop(self, *, release: bool = True, timeout: float = 10.0) -> None:
        """Stop campaigning or leading. ``release=False`` leaves the Lease as is, like a crash would."""
        self._release_on_stop = release
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run(self) -> None:
        """Campaign until leading, lead until the Lease is lost or ``stop``; then call back."""
        if not self._acquire():
            return
        self._leading.set()
        log.info("%s leads %s/%s", self.identity, self.namespace, self.name)
        threading.Thread(
            target=self._call, args=(self.on_started_leading,), name="started-leading", daemon=True
        ).start()
        try:
            self._renew()
        finally:
            self._leading.clear()
            if self._stop.is_set() and self._release_on_stop:
                self._release()
            log.info("%s no longer leads %s/%s", self.identity, self.namespace, self.name)
            self._call(self.on_stopped_leading)

    # ---------------------------------------------------------------- loops

    def _wait(self) -> None:
        self._stop.wait(self.retry_period * (1.0 + JITTER * random.random()))

    def _acquire(self) -> bool:
        while not self._stop.is_set():
            if self._try(timeout=self.retry_period * 5):
                return True
            self._wait()
        return False

    def _renew(self) -> None:
        while not self._stop.wait(self.retry_period):
            deadline = self._clock() + self.renew_deadline
            while not self._try(timeout=max(0.5, deadline - self._clock())):
                if self._clock() >= deadline:
                    log.error(
                        "%s could not renew %s/%s within %.1fs",
                        self.identity,
                        self.namespace,
                        self.name,
                        self.renew_deadline,
                    )
                    return
                if self._stop.wait(self.retry_period):
                    return

    @staticmethod
    def _call(fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:
            log.exception("leader election callback failed")

    # ------------------------------------------------------------- one try

    def _spec(self, *, acquire_time: str, transitions: int, now: str) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _observe(self, spec: dict[str, Any]) -> None:
        if spec != self._observed:
            self._observed = spec
            self._observed_at = self._clock()

    def _try(self, *, timeout: float) -> bool:
        """Take or renew the Lease once; False when someone else holds it or the write lost a race."""
        try:
            return self._try_once(timeout)
        except (Conflict, AlreadyExists):
            return False
        except KubeError as e:
            log.warning("%s: lease %s/%s: %s", self.identity, self.namespace, self.name, e)
            return False

    def _try_once(self, timeout: float) -> bool:
        now = micro_time(self._wall())
        try:
            lease = request(self.api_client, "GET", self._path, timeout=timeout)
        except NotFound:
            spec = self._spec(acquire_time=now, transitions=0, now=now)
            body = {
                "apiVersion": LEASE.api_version,
                "kind": LEASE.kind,
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            created = request(
                self.api_client, "POST", path_for(LEASE, namespace=self.namespace), body=body, timeout=timeout
            )
            self._observe(created.get("spec") or spec)
            return True
        spec = lease.get("spec") or {}
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity:
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if self._observed_at + duration > self._clock():
                return False  # held, and not expired by our own clock
        mine = holder == self.identity
        lease["spec"] = self._spec(
            acquire_time=(spec.get("acquireTime") or now) if mine else now,
            transitions=int(spec.get("leaseTransitions") or 0) + (0 if mine else 1),
            now=now,
        )
        updated = request(self.api_client, "PUT", self._path, body=lease, timeout=timeout)
        self._observe(updated.get("spec") or lease["spec"])
        return True

    def _release(self) -> None:
        try:
            lease = request(self.api_client, "GET", self._path, timeout=self.retry_period * 2)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time(self._wall())
            lease["spec"] = {
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0),
            }
            request(self.api_client, "PUT", self._path, body=lease, timeout=self.retry_period * 2)
            log.info("%s released %s/%s", self.identity, self.namespace, self.name)
        except KubeError as e:
            log.warning("%s: releasing lease %s/%s failed: %s", self.identity, self.namespace, self.name, e)
