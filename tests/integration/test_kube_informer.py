"""The informer against the real API server: it sees ConfigMaps come, change and go; it resumes after
its watch connection is cut; it survives the API server being unreachable; and when its
resourceVersion is too old (410 Gone) it lists again and reports what it missed.

Connections go through a small TCP relay on loopback, so the test can cut them or refuse them the way
a network or a restarting API server would."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from controller.kube import apply as kapi
from controller.kube.client import load_api_client, resource_for
from controller.kube.informer import Informer
from devtools.cluster.handle import Cluster

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
CONFIGMAP = resource_for("v1", "ConfigMap")
WaitFor = Callable[..., Any]
ROOT_CA = "kube-root-ca.crt"  # every namespace has it


class Relay:
    """A TCP relay to the API server: ``cut()`` drops open connections, ``refuse()`` drops new ones."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.refused = 0
        self._refusing = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            if self._refusing.is_set():
                down.close()
                with self._lock:
                    self.refused += 1
                continue
            try:
                up = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                down.close()
                continue
            up.settimeout(None)
            with self._lock:
                self.accepted += 1
                self._open |= {down, up}
            threading.Thread(target=self._pump, args=(down, up), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close(src)
            self._close(dst)

    def _close(self, s: socket.socket) -> None:
        with self._lock:
            self._open.discard(s)
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()

    def connections(self) -> int:
        with self._lock:
            return len(self._open) // 2

    def cut(self) -> None:
        with self._lock:
            sockets = list(self._open)
        for s in sockets:
            self._close(s)

    def refuse(self) -> None:
        self._refusing.set()
        self.cut()

    def allow(self) -> None:
        self._refusing.clear()

    def close(self) -> None:
        self.listener.close()
        self.cut()


class Recorder:
    """The handler: every (event, name) it was called with, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: str, obj: Obj, old: Obj | None) -> None:
        with self._lock:
            self.events.append((event, obj["metadata"]["name"]))

    def seen(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.events)


@pytest.fixture
def relay(cluster: Cluster) -> Iterator[Relay]:
    url = urlparse(cluster.server)
    r = Relay((url.hostname or "127.0.0.1", url.port or 443))
    yield r
    r.close()


@pytest.fixture
def relayed_api(cluster: Cluster, relay: Relay) -> Any:
    client = load_api_client(kubeconfig=str(cluster.kubeconfig))
    client.configuration.host = f"https://127.0.0.1:{relay.port}"
    return client


@pytest.fixture
def informer_for(relayed_api: Any, namespace: str) -> Iterator[Callable[..., tuple[Informer, Recorder]]]:
    started: list[Informer] = []

    def make(**changes: Any) -> tuple[Informer, Recorder]:
        recorder = Recorder()
        config: dict[str, Any] = {"namespace": namespace, "min_backoff": 0.1, "max_backoff": 1.0}
        config.update(changes)
        inf = Informer(relayed_api, CONFIGMAP, handler=recorder, **config)
        inf.start()
        started.append(inf)
        assert inf.wait_synced(timeout=30)
        return inf, recorder

    yield make
    for inf in started:
        inf.stop()


def make_configmap(namespace: str, name: str, **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def test_the_informer_sees_configmaps_added_modified_and_deleted(
    api: Any, namespace: str, informer_for: Callable[..., tuple[Informer, Recorder]], wait_for: WaitFor
) -> None:
    kapi.create(api, make_configmap(namespace, "before", a="1"))
    inf, rec = informer_for()
    assert ("ADDED", "before") in rec.seen()
    kapi.create(api, make_configmap(namespace, "cm", a="1"))
    kapi.apply(api, make_configmap(namespace, "cm", a="2"), field_manager="test")
    kapi.delete(api, "v1", "ConfigMap", namespace=namespace, name="cm")
    wait_for(rec.seen, lambda ev: ("DELETED", "cm") in ev, message="the DELETED event")
    assert [e for e in rec.seen() if e[1] == "cm"] == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]
    assert inf.get(namespace, "cm") is None
    before = inf.get(namespace, "before")
    assert before is not None
    assert (before["kind"], before["data"]) == ("ConfigMap", {"a": "1"})


def test_the_cache_holds_the_latest_copy(
    api: Any, namespace: str, informer_for: Callable[..., tuple[Informer, Recorder]], wait_for: WaitFor
) -> None:
    inf, _ = informer_for()
    kapi.create(api, make_configmap(namespace, "cm", v="1"))
    for v in range(2, 6):
        kapi.apply(api, make_configmap(namespace, "cm", v=str(v)), field_manager="test")
    live = kapi.get(api, "v1", "ConfigMap", namespace=namespace, name="cm")
    assert live is not None
    got = wait_for(
        lambda: inf.get(namespace, "cm"),
        lambda o: o is not None and o["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"],
        message="the cache to catch up",
    )
    assert got["data"] == {"v": "5"}
    assert sorted(o["metadata"]["name"] for o in inf.list(namespace)) == ["cm", ROOT_CA]


def test_a_label_selector_limits_what_the_informer_sees(
    api: Any, namespace: str, informer_for: Callable[..., tuple[Informer, Recorder]], wait_for: WaitFor
) -> None:
    inf, rec = informer_for(label_selector="owned=yes")
    unlabelled = make_configmap(namespace, "unlabelled")
    labelled = make_configmap(namespace, "labelled")
    labelled["metadata"]["labels"] = {"owned": "yes"}
    kapi.create(api, unlabelled)
    kapi.create(api, labelled)
    wait_for(rec.seen, lambda ev: ("ADDED", "labelled") in ev, message="the labelled ConfigMap")
    assert inf.get(namespace, "unlabelled") is None
    assert [name for _, name in rec.seen()] == ["labelled"]


def test_the_informer_resumes_its_watch_after_the_connection_drops(
    api: Any,
    namespace: str,
    relay: Relay,
    informer_for: Callable[..., tuple[Informer, Recorder]],
    wait_for: WaitFor,
) -> None:
    inf, rec = informer_for()
    wait_for(relay.connections, lambda n: n >= 1, message="the watch connection")
    watches = inf.watches
    relay.cut()
    kapi.create(api, make_configmap(namespace, "while-cut"))
    wait_for(rec.seen, lambda ev: ("ADDED", "while-cut") in ev, message="the event made while cut")
    assert inf.watches > watches
    assert inf.relists == 1, "resuming from the last resourceVersion needs no new list"


def test_the_informer_retries_while_the_api_server_is_unreachable(
    api: Any,
    namespace: str,
    relay: Relay,
    informer_for: Callable[..., tuple[Informer, Recorder]],
    wait_for: WaitFor,
) -> None:
    inf, rec = informer_for()
    relay.refuse()
    kapi.create(api, make_configmap(namespace, "while-down"))
    accepted = relay.accepted
    wait_for(lambda: relay.refused, lambda n: n >= 6, message="the informer retrying")
    relay.allow()
    wait_for(
        rec.seen, lambda ev: ("ADDED", "while-down") in ev, timeout=60, message="the event made while down"
    )
    assert relay.accepted > accepted
    assert inf.has_synced


def test_a_too_old_resource_version_makes_the_informer_list_again_and_report_what_it_missed(
    api: Any,
    namespace: str,
    relay: Relay,
    informer_for: Callable[..., tuple[Informer, Recorder]],
    wait_for: WaitFor,
) -> None:
    kapi.create(api, make_configmap(namespace, "deleted-meanwhile"))
    kapi.create(api, make_configmap(namespace, "changed-meanwhile", v="1"))
    inf, rec = informer_for()
    relay.refuse()
    kapi.delete(api, "v1", "ConfigMap", namespace=namespace, name="deleted-meanwhile")
    kapi.apply(api, make_configmap(namespace, "changed-meanwhile", v="2"), field_manager="test")
    kapi.create(api, make_configmap(namespace, "added-meanwhile"))
    # Make the informer resume from a resourceVersion older than the API server's watch cache, as after
    # a long partition or an etcd compaction: the server answers 410 Gone.
    inf._resource_version = "1"
    refused = relay.refused
    # One attempt makes at most three connections; the fourth belongs to an attempt started after this.
    wait_for(lambda: relay.refused, lambda n: n >= refused + 4, message="a retry from the old version")
    relay.allow()
    wait_for(
        rec.seen,
        lambda ev: (
            {
                ("DELETED", "deleted-meanwhile"),
                ("MODIFIED", "changed-meanwhile"),
                ("ADDED", "added-meanwhile"),
            }
            <= set(ev)
        ),
        timeout=60,
        message="the changes made during the gap",
    )
    assert inf.relists == 2
    changed = inf.get(namespace, "changed-meanwhile")
    assert changed is not None
    assert changed["data"] == {"v": "2"}
    assert sorted(o["metadata"]["name"] for o in inf.list()) == [
        "added-meanwhile",
        "changed-meanwhile",
        ROOT_CA,
    ]


def test_a_failing_handler_does_not_stop_the_informer(
    api: Any, relayed_api: Any, namespace: str, wait_for: WaitFor
) -> None:
    seen: list[str] = []

    def handler(event: str, obj: Obj, old: Obj | None) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "poison":
            raise RuntimeError("handler bug")

    inf = Informer(relayed_api, CONFIGMAP, namespace=namespace, handler=handler)
    inf.start()
    try:
        assert inf.wait_synced(timeout=30)
        kapi.create(api, make_configmap(namespace, "poison"))
        kapi.create(api, make_configmap(namespace, "after"))
        wait_for(lambda: list(seen), lambda s: "after" in s, message="the event after the failing one")
        assert inf.get(namespace, "after") is not None
    finally:
        inf.stop()


def test_stop_ends_the_informer_thread(relayed_api: Any, namespace: str) -> None:
    inf = Informer(relayed_api, CONFIGMAP, namespace=namespace)
    inf.start()
    assert inf.wait_synced(timeout=30)
    inf.stop(timeout=10)
    assert inf._thread is not None
    assert not inf._thread.is_alive()
