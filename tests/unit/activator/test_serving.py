"""The activator over real TLS in-process: SNI, the token, the hold, the forward and the bounds."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.unit.activator.support import ORDER, OTHER, TOKEN, Seen, running, until, upstream


def test_the_sni_picks_the_order_s_own_certificate(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run:
            for order in (ORDER, OTHER):
                for host in (order.host, order.host + ".cluster.local"):
                    _, writer = await run.open_tls(host)
                    cert = writer.get_extra_info("ssl_object").getpeercert()
                    assert dict(x[0] for x in cert["subject"])["commonName"] == order.host
                    writer.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "host", ["nobody.team.svc", "chat.elsewhere.svc", "example.com", "chat.team.svc.evil"]
)
def test_a_handshake_for_an_unknown_host_is_refused(tmp_path: Path, host: str) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # no default certificate to see at all
            # an alert (ssl.SSLError) or, when the alert is lost, a reset
            with pytest.raises((ssl.SSLError, ConnectionResetError)):
                await asyncio.open_connection("127.0.0.1", run.port, ssl=context, server_hostname=host)
            assert run.refused("unknown_order") == 1

    asyncio.run(scenario())


def test_a_renewed_certificate_serves_the_next_handshake(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run:
            _, w = await run.open_tls()
            first = w.get_extra_info("ssl_object").getpeercert(binary_form=True)
            w.close()
            run.orders.set_tls(ORDER, *run.ca.pair(ORDER.host))
            _, w = await run.open_tls()
            assert w.get_extra_info("ssl_object").getpeercert(binary_form=True) != first
            w.close()
            assert run.activator.certificates.loads == 2

    asyncio.run(scenario())


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", TOKEN.upper()])
def test_a_request_without_the_token_gets_401_and_wakes_nothing(tmp_path: Path, token: str | None) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, run.client() as client:
            response = await run.call(client, token=token)
            assert response.status_code == 401
            assert response.json() == {"error": "Unauthorized"}
            assert run.held() == 0
            assert run.wakeups() == 0
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "timeout"}) == 0
            assert run.refused("unauthorized") == 1

    asyncio.run(scenario())


def test_an_order_without_its_auth_secret_is_refused_with_401(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, run.client() as client:
            run.orders.set_token(ORDER, None)
            response = await run.call(client)
            assert response.status_code == 401
            assert run.held() == 0
            assert run.refused("unknown_order") == 1

    asyncio.run(scenario())


def test_another_order_s_token_is_refused(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, run.client() as client:
            run.orders.set_token(OTHER, "the-other-token")
            response = await run.call(client, token="the-other-token")
            assert response.status_code == 401

    asyncio.run(scenario())


def test_a_held_request_is_forwarded_once_the_upstream_is_ready(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca) as up, run.client() as client:
            call = asyncio.create_task(
                run.call(client, "/v1/chat/completions?x=1", json={"model": "m", "n": 1})
            )
            await until(lambda: run.held() == 1)
            assert run.wakeups() == 1
            await asyncio.sleep(0.1)
            assert not call.done()
            run.orders.set_ready(ORDER, [up.address])
            response = await call
            assert response.status_code == 200
            assert response.json() == {"ok": True}
            assert run.held() == 0
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "forwarded"}) == 1
            (seen,) = up.seen
            assert (seen.method, seen.target) == ("POST", "/v1/chat/completions?x=1")
            assert seen.headers["host"] == ORDER.host
            assert seen.headers["authorization"] == f"Bearer {TOKEN}"
            assert json.loads(seen.body) == {"model": "m", "n": 1}

    asyncio.run(scenario())


def test_only_the_first_hold_of_an_idle_order_counts_as_a_wakeup(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca) as up, run.client() as client:
            calls = [asyncio.create_task(run.call(client)) for _ in range(3)]
            await until(lambda: run.held() == 3)
            assert run.wakeups() == 1
            run.orders.set_ready(ORDER, [up.address])
            assert [r.status_code for r in await asyncio.gather(*calls)] == [200] * 3
            response = await run.call(client)  # ready at once: no hold, no wakeup
            assert response.status_code == 200
            assert run.wakeups() == 1
            assert run.held() == 0

    asyncio.run(scenario())


def test_a_streamed_answer_arrives_chunk_by_chunk_in_order(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def sse(_: Seen, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        for i in range(3):
            event = f"data: {i}\n\n".encode()
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await release.wait()
            release.clear()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca, handler=sse) as up, run.client() as client:
            run.orders.set_ready(ORDER, [up.address])
            got = []
            async with client.stream(
                "POST",
                f"https://127.0.0.1:{run.port}/v1/chat/completions",
                headers={"host": ORDER.host, "authorization": f"Bearer {TOKEN}"},
                json={"model": "m", "stream": True},
                extensions={"sni_hostname": ORDER.host},
            ) as response:
                assert response.headers["content-type"] == "text/event-stream"
                async for chunk in response.aiter_text():
                    got.append(chunk)  # each arrives before the upstream sends the next
                    release.set()
            assert "".join(got) == "data: 0\n\ndata: 1\n\ndata: 2\n\n"
            assert got[0] == "data: 0\n\n"

    asyncio.run(scenario())


def test_the_hold_bound_gives_503_with_retry_after_and_the_gauge_returns_to_zero(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, max_hold_seconds=0.3, retry_after_seconds=7) as run,
            run.client() as client,
        ):
            response = await run.call(client)
            assert response.status_code == 503
            assert response.headers["retry-after"] == "7"
            assert response.json()["error"]["code"] == 503
            assert run.held() == 0
            assert run.refused("timeout") == 1
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "timeout"}) == 1

    asyncio.run(scenario())


def test_too_many_held_requests_get_503_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, max_held_per_order=2, max_held_total=3) as run, run.client() as client:
            held = [asyncio.create_task(run.call(client)) for _ in range(2)]
            await until(lambda: run.held() == 2)
            response = await run.call(client)
            assert response.status_code == 503
            assert "retry-after" in response.headers
            assert run.refused("too_many_held") == 1
            other = asyncio.create_task(run.call(client, host=OTHER.host))
            await until(lambda: run.held(OTHER) == 1)
            response = await run.call(client, host=OTHER.host)  # the total bound
            assert response.status_code == 503
            assert run.refused("too_many_held") == 2
            for task in (*held, other):
                task.cancel()
            await asyncio.gather(*held, other, return_exceptions=True)
            await until(lambda: run.held() == 0 and run.held(OTHER) == 0)
            assert run.activator.holds.total == 0

    asyncio.run(scenario())


def test_bodies_beyond_the_total_budget_get_503_before_they_are_read(tmp_path: Path) -> None:
    """One tenant's callers (with a valid token) cannot make the activator keep bodies beyond
    ``max_body_bytes_total`` for every order: the next one is refused before it is read, and the
    budget comes back when the held ones end."""
    big = {"model": "m", "prompt": "x" * 3000}

    async def scenario() -> None:
        async with running(tmp_path, max_body_bytes_total=7000) as run, run.client() as client:
            held = [asyncio.create_task(run.call(client, json=big)) for _ in range(2)]
            await until(lambda: run.held() == 2)
            assert run.activator.proxy.body_bytes > 6000
            response = await run.call(client, json=big)
            assert response.status_code == 503 and "retry-after" in response.headers
            assert "bodies" in response.json()["error"]["message"]
            for task in held:
                task.cancel()
            await asyncio.gather(*held, return_exceptions=True)
            await until(lambda: run.held() == 0 and run.activator.proxy.body_bytes == 0)
            third = asyncio.create_task(run.call(client, json=big))
            await until(lambda: run.held() == 1)  # the budget is back
            third.cancel()
            await asyncio.gather(third, return_exceptions=True)

    asyncio.run(scenario())


def test_a_client_that_leaves_while_held_releases_its_hold(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, run.client() as client:
            task = asyncio.create_task(run.call(client))
            await until(lambda: run.held() == 1)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await until(lambda: run.held() == 0)
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "client_closed"}) == 1

    asyncio.run(scenario())


def test_a_slow_client_with_half_a_header_is_closed_and_holds_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, header_timeout_seconds=0.3) as run:
            reader, writer = await run.open_tls()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: chat.team.svc\r\nauthoriz")
            await writer.drain()
            assert run.held() == 0
            async with asyncio.timeout(2):
                assert await reader.read() == b""  # closed, with no answer
            assert run.held() == 0
            assert run.activator.holds.total == 0
            writer.close()

    asyncio.run(scenario())


def test_a_slow_body_is_answered_408_and_holds_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, body_timeout_seconds=0.3) as run:
            reader, writer = await run.open_tls()
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: chat.team.svc\r\n"
                + f"authorization: Bearer {TOKEN}\r\ncontent-length: 100\r\n\r\n{{".encode()
            )
            await writer.drain()
            async with asyncio.timeout(2):
                answer = await reader.read()
            assert answer.startswith(b"HTTP/1.1 408 ")
            assert run.held() == 0
            assert run.wakeups() == 0
            writer.close()

    asyncio.run(scenario())


def test_an_oversized_body_gets_413(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, max_body_bytes=1024) as run, run.client() as client:
            response = await run.call(client, json={"prompt": "x" * 2000})
            assert response.status_code == 413
            assert run.held() == 0
            chunked = await client.post(
                f"https://127.0.0.1:{run.port}/v1/completions",
                headers={"host": ORDER.host, "authorization": f"Bearer {TOKEN}"},
                content=_chunks(b"y" * 512, 3),  # no content-length: chunked
                extensions={"sni_hostname": ORDER.host},
            )
            assert chunked.status_code == 413
            assert run.held() == 0

    asyncio.run(scenario())


async def _chunks(chunk: bytes, n: int) -> AsyncIterator[bytes]:
    for _ in range(n):
        yield chunk


def test_oversized_headers_get_431(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, max_header_bytes=4096) as run, run.client() as client:
            response = await client.get(
                f"https://127.0.0.1:{run.port}/v1/models",
                headers={"host": ORDER.host, "authorization": f"Bearer {TOKEN}", "x-big": "z" * 8000},
                extensions={"sni_hostname": ORDER.host},
            )
            assert response.status_code == 431
            assert run.held() == 0

    asyncio.run(scenario())


def test_the_address_override_sends_every_forward_to_one_address_with_the_order_s_sni(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca) as up:
            await run.activator.stop()
            run.activator.__init__(  # type: ignore[misc]
                settings=run.activator.settings.__class__(
                    **{
                        **{f: getattr(run.activator.settings, f) for f in run.activator.settings.__slots__},
                        "upstream_address_override": up.address,
                    }
                ),
                secrets=run.orders,
                upstreams=run.orders,
                readiness=run.orders,
            )
            await run.activator.start()
            run.orders.set_ready(ORDER, ["192.0.2.1:8443"])  # unreachable: the override wins
            async with run.client() as client:
                response = await run.call(client, "/v1/models", method="GET", json=None)
            assert response.status_code == 200
            assert up.seen[0].headers["host"] == ORDER.host

    asyncio.run(scenario())


async def _closed_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port


def test_a_ready_upstream_that_does_not_listen_yet_is_waited_for_not_answered_502(tmp_path: Path) -> None:
    """A replica listed ready before its server listens (KWOK, endpoint lag): the forward fails
    before any answer, the request is held again (gauge 1) and forwarded once an upstream answers."""

    async def scenario() -> None:
        async with (
            running(tmp_path, upstream_retry_seconds=0.05) as run,
            upstream(run.ca) as up,
            run.client() as client,
        ):
            run.orders.set_ready(ORDER, [f"127.0.0.1:{await _closed_port()}"])
            call = asyncio.create_task(run.call(client))
            await until(lambda: run.sample("inference_activator_forward_errors_total") >= 2)
            assert not call.done()
            assert run.held() == 1  # held again: the wake-up signal stays up
            assert run.wakeups() == 0  # the order had a ready replica: not a wake-up
            run.orders.set_ready(ORDER, [up.address])
            response = await call
            assert response.status_code == 200
            assert run.held() == 0
            assert len(up.seen) == 1
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "forwarded"}) == 1

    asyncio.run(scenario())


def test_an_upstream_that_never_listens_gives_503_with_retry_after_at_the_bound(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(
                tmp_path, max_hold_seconds=0.5, retry_after_seconds=3, upstream_retry_seconds=0.05
            ) as run,
            run.client() as client,
        ):
            run.orders.set_ready(ORDER, [f"127.0.0.1:{await _closed_port()}"])
            t0 = asyncio.get_running_loop().time()
            response = await run.call(client)
            elapsed = asyncio.get_running_loop().time() - t0
            assert response.status_code == 503
            assert response.headers["retry-after"] == "3"
            assert 0.45 <= elapsed < 2.0  # the bound, not a forward per retry beyond it
            assert run.sample("inference_activator_forward_errors_total") >= 2
            assert run.held() == 0
            assert run.refused("timeout") == 1
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "timeout"}) == 1
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "forwarded"}) == 0
            assert run.activator.holds.total == 0

    asyncio.run(scenario())


def test_an_upstream_with_another_order_s_certificate_is_not_trusted(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, max_hold_seconds=0.5, upstream_retry_seconds=0.05) as run,
            upstream(run.ca, hosts=(OTHER.host,)) as up,
            run.client() as client,
        ):
            run.orders.set_ready(ORDER, [up.address])
            response = await run.call(client)
            assert response.status_code == 503  # never forwarded: held until the bound
            assert up.seen == []
            assert run.held() == 0

    asyncio.run(scenario())


def test_a_client_that_leaves_while_held_again_releases_its_hold(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, upstream_retry_seconds=0.05) as run, run.client() as client:
            run.orders.set_ready(ORDER, [f"127.0.0.1:{await _closed_port()}"])
            task = asyncio.create_task(run.call(client))
            await until(lambda: run.held() == 1)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await until(lambda: run.held() == 0)
            assert run.activator.holds.total == 0

    asyncio.run(scenario())


def test_a_forward_carries_via_and_a_request_that_loops_back_is_closed_not_held(tmp_path: Path) -> None:
    """An entry address that sends the activator's own forward back to it (a Service still listing
    the activator while the replica is listed ready): the looped request is closed unanswered, never
    held, and the forwarding side holds on and answers 503 at its bound, instead of nesting holds."""

    async def scenario() -> None:
        async with running(tmp_path, max_hold_seconds=0.6, upstream_retry_seconds=0.05) as run:
            run.activator.forwarder._override = f"127.0.0.1:{run.port}"  # forwards go back to itself
            run.orders.set_ready(ORDER, ["192.0.2.1:8443"])
            async with run.client() as client:
                response = await run.call(client)
            assert response.status_code == 503
            assert run.refused("loop") >= 2  # each retry came back and was closed
            assert run.sample("inference_activator_hold_seconds_count", {"outcome": "forwarded"}) == 0
            assert run.held() == 0 and run.activator.holds.total == 0
            assert run.activator.proxy.connections == 0

    asyncio.run(scenario())


def test_a_forward_says_via_the_activator(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca) as up, run.client() as client:
            run.orders.set_ready(ORDER, [up.address])
            assert (await run.call(client)).status_code == 200
            assert up.seen[0].headers["via"] == "1.1 inference-activator"

    asyncio.run(scenario())


def test_the_admin_port_serves_metrics_and_health(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, httpx.AsyncClient(trust_env=False) as client:
            base = f"http://127.0.0.1:{run.admin_port}"
            assert (await client.get(base + "/healthz")).status_code == 200
            assert (await client.get(base + "/readyz")).status_code == 200
            assert (await client.get(base + "/nothing")).status_code == 404
            metrics = (await client.get(base + "/metrics")).text
            for name in (
                "inference_activator_hold_seconds",
                "inference_activator_requests_refused_total",
            ):
                assert name in metrics

    asyncio.run(scenario())


def test_a_declared_oversized_body_gets_413_before_it_is_sent(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, max_body_bytes=1024) as run:
            reader, writer = await run.open_tls()
            writer.write(
                b"POST /v1/completions HTTP/1.1\r\nhost: chat.team.svc\r\n"
                + f"authorization: Bearer {TOKEN}\r\ncontent-length: 5000000\r\n\r\n".encode()
            )
            await writer.drain()
            async with asyncio.timeout(2):
                assert (await reader.read()).startswith(b"HTTP/1.1 413 ")
            assert run.held() == 0
            writer.close()

    asyncio.run(scenario())


def test_a_client_expecting_100_continue_is_told_to_continue_and_forwarded(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run, upstream(run.ca) as up:
            run.orders.set_ready(ORDER, [up.address])
            reader, writer = await run.open_tls()
            writer.write(
                b"POST /v1/completions HTTP/1.1\r\nhost: chat.team.svc\r\nexpect: 100-continue\r\n"
                + f"authorization: Bearer {TOKEN}\r\ncontent-length: 2\r\nconnection: x-hop\r\nx-hop: 1\r\n\r\n".encode()
            )
            await writer.drain()
            async with asyncio.timeout(2):
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100 ")
                writer.write(b"{}")
                answer = await reader.read()
            assert answer.startswith(b"HTTP/1.1 200 ")
            (seen,) = up.seen
            assert seen.body == b"{}"
            assert not {"expect", "x-hop", "connection"} & set(seen.headers)
            writer.close()

    asyncio.run(scenario())


def test_connections_beyond_the_bound_are_closed_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path, max_connections=2) as run:
            opened = [await run.open_tls() for _ in range(2)]
            await until(lambda: run.activator.proxy.connections == 2)
            reader, writer = await run.open_tls()
            async with asyncio.timeout(2):
                assert await reader.read() == b""
            assert run.refused("too_many_held") == 1
            for _, w in (*opened, (reader, writer)):
                w.close()

    asyncio.run(scenario())


def test_a_renewal_that_does_not_load_keeps_the_certificate_that_did(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as run:
            _, w = await run.open_tls()
            first = w.get_extra_info("ssl_object").getpeercert(binary_form=True)
            w.close()
            cert, _ = run.ca.pair(ORDER.host)
            _, other_key = run.ca.pair(ORDER.host)
            run.orders.set_tls(ORDER, cert, other_key)  # a key that does not match
            for _ in range(2):
                _, w = await run.open_tls()
                assert w.get_extra_info("ssl_object").getpeercert(binary_form=True) == first
                w.close()
            assert run.activator.certificates.loads == 1  # the broken pair never replaced it

    asyncio.run(scenario())
