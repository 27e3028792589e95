"""A test CA, orders' certificates, a small HTTPS upstream and a running activator, all in-process."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
from cryptography import x509

from activator.app import Activator
from activator.hosts import OrderKey
from activator.memory import MemoryOrders
from activator.settings import Settings
from devtools.pki import cert_pem, key_pem, new_ca, new_leaf

ORDER = OrderKey("team", "chat")
OTHER = OrderKey("team", "embed")
TOKEN = "s3cret-token"


@dataclass
class TestCA:
    cert: x509.Certificate
    key: object
    pem: bytes

    def pair(self, host: str) -> tuple[bytes, bytes]:
        cert, key = new_leaf(
            self.cert,
            self.key,  # type: ignore[arg-type]
            common_name=host,
            hosts=(host, host + ".cluster.local"),
            server=True,
            now=dt.datetime.now(dt.UTC),
            days=1,
        )
        return cert_pem(cert), key_pem(key)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.pem.decode())


def make_ca() -> TestCA:
    cert, key = new_ca("activator test CA", now=dt.datetime.now(dt.UTC), days=1)
    return TestCA(cert, key, cert_pem(cert))


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Seen, asyncio.StreamWriter], Awaitable[None]]


async def answer_json(_: Seen, writer: asyncio.StreamWriter) -> None:
    body = b'{"ok": true}'
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (len(body), body)
    )
    await writer.drain()


@dataclass
class Upstream:
    """An HTTPS server standing for an order's replica: records each request, answers with ``handler``."""

    context: ssl.SSLContext
    handler: Handler = answer_json
    seen: list[Seen] = field(default_factory=list)
    server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:] if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            seen = Seen(method, target, headers, body)
            self.seen.append(seen)
            await self.handler(seen, writer)
        finally:
            writer.close()


@asynccontextmanager
async def upstream(
    ca: TestCA, hosts: tuple[str, ...] = (ORDER.host,), handler: Handler = answer_json
) -> AsyncIterator[Upstream]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert, key = ca.pair(hosts[0])
    tmp = Path(__import__("tempfile").mkdtemp(prefix="activator-upstream-"))
    (tmp / "c.pem").write_bytes(cert)
    (tmp / "k.pem").write_bytes(key)
    context.load_cert_chain(tmp / "c.pem", tmp / "k.pem")
    up = Upstream(context, handler)
    up.server = await asyncio.start_server(up._handle, "127.0.0.1", 0, ssl=context)
    try:
        yield up
    finally:
        up.server.close()


def test_settings(ca_file: str, **changes: object) -> Settings:
    base = Settings(
        host="127.0.0.1",
        port=0,
        admin_host="127.0.0.1",
        admin_port=0,
        upstream_ca_file=ca_file,
        upstream_poll_seconds=0.02,
        header_timeout_seconds=2.0,
        body_timeout_seconds=2.0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass
class Running:
    activator: Activator
    orders: MemoryOrders
    ca: TestCA

    @property
    def port(self) -> int:
        return self.activator.ports[0]

    @property
    def admin_port(self) -> int:
        return self.activator.ports[1]

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(verify=self.ca.client_context(), trust_env=False, timeout=10)

    async def call(
        self,
        client: httpx.AsyncClient,
        path: str = "/v1/chat/completions",
        *,
        host: str = ORDER.host,
        token: str | None = TOKEN,
        json: object | None = None,
        method: str = "POST",
    ) -> httpx.Response:
        headers = {"host": host}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return await client.request(
            method,
            f"https://127.0.0.1:{self.port}{path}",
            headers=headers,
            json=json if json is not None else {"model": "m", "messages": []},
            extensions={"sni_hostname": host},
        )

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        value = self.activator.registry.get_sample_value(name, labels or {})
        return 0.0 if value is None else value

    def held(self, order: OrderKey = ORDER) -> float:
        return self.sample(
            "inference_activator_requests_held", {"namespace": order.namespace, "order": order.name}
        )

    def wakeups(self, order: OrderKey = ORDER) -> float:
        return self.sample(
            "inference_activator_wakeups_total", {"namespace": order.namespace, "order": order.name}
        )

    def refused(self, reason: str) -> float:
        return self.sample("inference_activator_requests_refused_total", {"reason": reason})

    async def open_tls(self, host: str = ORDER.host) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(
            "127.0.0.1", self.port, ssl=self.ca.client_context(), server_hostname=host
        )


@asynccontextmanager
async def running(tmp_path: Path, ca: TestCA | None = None, **changes: object) -> AsyncIterator[Running]:
    ca = ca or make_ca()
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca.pem)
    orders = MemoryOrders()
    for order in (ORDER, OTHER):
        orders.set_tls(order, *ca.pair(order.host))
        orders.set_token(order, TOKEN)
    activator = Activator(
        settings=test_settings(str(ca_file), **changes), secrets=orders, upstreams=orders, readiness=orders
    )
    await activator.start()
    try:
        yield Running(activator, orders, ca)
    finally:
        await activator.stop()


async def until(predicate: Callable[[], bool], timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)
