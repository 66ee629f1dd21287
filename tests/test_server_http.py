"""Our HTTP routes: /healthz, /readyz, /metrics, the CosywebError -> status mapping
(503 + Retry-After for busy), Gradio mounted at / without shadowing them, and auth."""

from __future__ import annotations

import pytest
from fakes import FakeEngine, Gate, service_factory, submit  # noqa: F401
from fastapi import APIRouter
from fastapi.testclient import TestClient

from cosyweb.errors import BusyError, ClientLimitError, InvalidInputError, JobTimeoutError
from cosyweb.server.app import build_app

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def svc(service_factory, tmp_path):
    return service_factory(FakeEngine(), output_dir=tmp_path / "out")


def test_healthz_and_readyz_follow_the_service(svc):
    client = TestClient(build_app(svc, svc.settings, mount_ui=False))
    assert client.get("/healthz").status_code == 200
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json() == {"status": "ready", "engine": "fake"}
    svc.shutdown(grace_s=0)  # not ready any more (draining / stopped)
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["status"] == "not_ready" and r.headers["Retry-After"]


def test_healthz_is_503_when_the_service_is_unhealthy(svc, monkeypatch):
    monkeypatch.setattr(type(svc), "healthy", property(lambda self: False))
    r = TestClient(build_app(svc, svc.settings, mount_ui=False)).get("/healthz")
    assert r.status_code == 503 and r.json()["status"] == "unhealthy"


def test_metrics_expose_the_service_registry_in_prometheus_text(svc):
    gate = svc.engine.on("*", before=Gate()).before
    job = submit(svc, "a")
    assert gate.wait_reached()
    r = TestClient(build_app(svc, svc.settings, mount_ui=False)).get("/metrics")
    gate.open()
    job.result(timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    lines = r.text.splitlines()
    assert "cosyweb_active_jobs 1.0" in lines
    assert any(line.startswith("cosyweb_queue_depth ") for line in lines)
    assert any(line.startswith("# TYPE ") and "histogram" in line for line in lines)


@pytest.mark.parametrize(
    "err, status, retry_after",
    [
        (BusyError(retry_after_s=2.2, queue_depth=3), 503, "3"),
        (BusyError(retry_after_s=0.0), 503, "1"),
        (ClientLimitError(1), 429, "2"),
        (InvalidInputError("text.bad_annotation", "第5个字符处的拼音标注 [hoo4] 无效", "invalid pinyin annotation [hoo4] at character 5", position=5), 422, None),
        (JobTimeoutError(30), 504, None),
    ],
)
def test_cosyweb_errors_map_to_http_status_codes(svc, err, status, retry_after):
    router = APIRouter()

    @router.get("/boom")
    def boom():
        raise err

    r = TestClient(build_app(svc, svc.settings, routers=[router], mount_ui=False)).get("/boom")
    assert r.status_code == status
    assert r.headers.get("Retry-After") == retry_after
    body = r.json()["error"]
    assert body["code"] == err.code and body["zh"] == err.zh and body["en"] == err.en


def test_unexpected_errors_are_a_generic_500(svc):
    router = APIRouter()

    @router.get("/oops")
    def oops():
        raise RuntimeError("secret internal detail")

    r = TestClient(build_app(svc, svc.settings, routers=[router], mount_ui=False), raise_server_exceptions=False).get("/oops")
    assert r.status_code == 500 and "secret" not in r.text


def test_gradio_is_mounted_at_root_without_shadowing_our_routes(svc):
    with TestClient(build_app(svc, svc.settings)) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics").status_code == 200
        page = client.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        info = client.get("/gradio_api/info").json()
        assert {"/synthesize", "/synthesize_stream"} <= set(info["named_endpoints"])


def test_auth_protects_the_ui_but_not_the_probes(svc):
    settings = svc.settings.model_copy(update={"auth": "alice:s3cret"})
    with TestClient(build_app(svc, settings)) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/config").status_code == 401
        assert client.post("/login", data={"username": "alice", "password": "wrong"}).status_code == 400
        assert client.post("/login", data={"username": "alice", "password": "s3cret"}).status_code == 200
        assert client.get("/config").status_code == 200
