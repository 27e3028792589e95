"""A tiny-model order's rendered Deployment, run by the pod runner (devtools/podrunner), really serves:
the rendered fetcher downloads exactly the model's files from the loopback mirror with the ``hf`` CLI
of huggingface_hub 2.4.0 (the pinned image's), the token guard is written, and the real vLLM 0.32
(CPU build) ends TLS with the order's certificate. The controller's own probe passes through the
address (as ``probeAddressOverride``) with the endpoint host as SNI and the test CA; a chat completion
answers 200 with the token and 401 without it. The session fixture (conftest.py) checks at its end
that stopping the runner leaves no process.

Slow: one vLLM start, shared with test_vllm_token_guard.py (see ``served`` in conftest.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from controller.render import pod as pod_render
from devtools import hf_cli
from devtools.podrunner import images
from devtools.podrunner.runner import group_members
from shared import names, runtime_images
from tests.integration.fetcher_run import files_under
from tests.runtime.served_pod import ORDER, SERVED, ServedPod, tiny_repo

CHAT_BODY = {"model": SERVED, "messages": [{"role": "user", "content": "hello model"}], "max_tokens": 8}


def test_the_fetcher_downloaded_exactly_the_models_files(served: ServedPod) -> None:
    got = files_under(served.model_dir)
    assert set(got) == set(served.facts.files)
    repo = tiny_repo()
    assert got == {name: repo.files[name].size for name in got}
    assert {"model.safetensors", "config.json", "chat_template.jinja", "tokenizer.json"} <= set(got)
    for name in got:  # the real bytes, not the mirror's padding
        assert (served.model_dir / name).read_bytes() == repo.files[name].head


def test_the_fetcher_ran_as_rendered_with_the_pinned_images_hf(served: ServedPod) -> None:
    (init,) = [c for c in served.pod["initContainers"] if c["name"] == names.FETCHER_CONTAINER]
    launch = served.runner.launches[names.FETCHER_CONTAINER]
    assert list(launch.argv) == [*init["command"], *init["args"]]
    hf_bin = hf_cli.hf_path(runtime_images.pinned().huggingface_hub).parent
    assert launch.env["PATH"].split(os.pathsep)[0] == str(hf_bin)
    rendered_env = {e["name"]: e["value"] for e in init["env"]}
    changed = {k for k in rendered_env if launch.env[k] != rendered_env[k]}
    assert changed <= {"MODEL_FETCHER_METRICS_PORT"}, changed  # only when 9090 is taken here
    assert launch.env["HF_ENDPOINT"] == served.mirror.url
    downloads = {r.path.rsplit("/", 1)[-1] for r in served.mirror.requests() if r.kind == "file_get"}
    assert downloads == {name.rsplit("/", 1)[-1] for name in served.facts.files}


def test_the_runtime_runs_its_rendered_launch(served: ServedPod) -> None:
    (runtime,) = served.pod["containers"]
    launch = served.runner.launches["runtime"]
    vllm = images.pinned_vllm()[runtime["image"]]
    assert runtime["image"] == runtime_images.pinned().image
    assert "command" not in runtime  # the image's entrypoint, `vllm serve`
    assert list(launch.argv[: len(vllm.entrypoint)]) == list(vllm.entrypoint)
    args, rendered = list(launch.argv[len(vllm.entrypoint) :]), list(runtime["args"])
    diff = [(a, b) for a, b in zip(args, rendered, strict=True) if a != b]
    i = rendered.index("--port")
    assert all(b in ("0.0.0.0", rendered[i + 1]) for _, b in diff), diff  # only the listen address
    for flag in ("--ssl-certfile", "--ssl-keyfile", "--enable-ssl-refresh", "--middleware"):
        assert flag in args
    assert args[args.index("--ssl-certfile") + 1] == f"{names.TLS_MOUNT_PATH}/tls.crt"
    assert launch.env[names.API_KEY_ENV] == served.token
    assert launch.env[images.KV_CACHE_ENV] == "1"
    home = served.runner.volumes["home"]
    guard = home / ".token-guard" / "inference_token_guard.py"
    assert guard.read_text() == pod_render.token_guard_program()
    tls = served.runner.volumes["tls"]
    # the kubelet's layout: each key a link into ..data, a link to the timestamped directory
    assert {p.name for p in tls.iterdir() if not p.name.startswith("..")} == {"tls.crt", "tls.key", "ca.crt"}
    assert (tls / "tls.crt").readlink() == Path("..data/tls.crt")


def test_the_controllers_probe_passes_through_the_address(served: ServedPod) -> None:
    assert served.probe is not None and served.probe.ok, served.probe
    prober = served.prober()
    try:
        assert prober.probe(served.url, served.token).ok
        refused = prober.probe(served.url, None)
        assert not refused.ok and "401" in refused.detail
    finally:
        prober.close()


def test_a_chat_completion_through_tls_needs_the_token(served: ServedPod) -> None:
    with served.client() as client:
        ok = client.post(
            "/v1/chat/completions", json=CHAT_BODY, headers={"Authorization": f"Bearer {served.token}"}
        )
        assert ok.status_code == 200, ok.text
        assert ok.json()["model"] == SERVED
        assert 0 < ok.json()["usage"]["completion_tokens"] <= 8
        assert client.post("/v1/chat/completions", json=CHAT_BODY).status_code == 401
        models = client.get("/v1/models", headers={"Authorization": f"Bearer {served.token}"}).json()
        assert [m["owned_by"] for m in models["data"]] == ["vllm"]


def test_each_container_is_its_own_process_group(served: ServedPod) -> None:
    status = served.runner.statuses()["runtime"]
    assert status.running and status.exit_code is None
    members = group_members(status.pid)
    assert status.pid in members and len(members) >= 2  # the API server and its engine core
    ns = {Path(f"/proc/{pid}/ns/mnt").readlink() for pid in members}
    assert ns != {Path("/proc/self/ns/mnt").readlink()}  # a private mount namespace


def renew(served: ServedPod) -> bool:
    """cert-manager renews ``<order>-tls`` and the kubelet swaps the Secret volume's ``..data`` link
    (``PodRunner.update_secret``); whether vLLM serves the new certificate within 30 s.

    The swap waits for the next second of the wall clock: the files of two renewals must not carry
    the same mtime second (the poller compares whole seconds, see below). In a cluster two renewals
    are far more than a second apart (cert-manager renews at 2/3 of the lifetime, and the kubelet
    syncs a Secret volume about once a minute)."""
    time.sleep(1.05 - time.time() % 1.0)
    data, serial = served.ca.tls_secret(served.host)
    assert served.runner.update_secret(names.tls_secret(ORDER), data) == 1
    deadline = time.monotonic() + 30
    while served.served_serial() != serial and time.monotonic() < deadline:
        time.sleep(0.5)
    return served.served_serial() == serial


def test_a_renewed_certificate_is_served_without_a_restart(served: ServedPod) -> None:
    pid = served.runner.statuses()["runtime"].pid
    assert renew(served), "the first renewal: the old certificate is still served"
    assert served.runner.statuses()["runtime"].pid == pid  # --enable-ssl-refresh, no restart
    prober = served.prober()
    try:
        assert prober.probe(served.url, served.token).ok
    finally:
        prober.close()


def test_every_later_renewal_is_served_too(served: ServedPod) -> None:
    """vLLM's ``--enable-ssl-refresh`` watches ``tls.crt``/``tls.key`` with watchfiles (``awatch``).
    In the Secret volume each is a link through ``..data`` into a timestamped directory that the
    kubelet replaces and deletes on every update. With inotify (watchfiles' default) the watch is on
    the inode the link pointed to when it started (inotify_add_watch follows links): the first swap
    deletes that file, notify reports it removed, drops the watch and never adds it again, so only
    the first renewal was loaded. The rendered runtime sets ``WATCHFILES_FORCE_POLLING=true``: notify's
    PollWatcher stats the paths themselves (through the links) every 300 ms and reports a newer
    mtime, so every renewal is loaded. Its mtime has whole seconds and it reports only a later one,
    hence the spacing in ``renew``."""
    for renewal in (2, 3):
        assert renew(served), f"renewal {renewal}: the old certificate is still served"
