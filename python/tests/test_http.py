"""hurray.ingest over HTTP(S) (issue 15), against Debian's nginx started on
loopback with a throw-away certificate (skipped when nginx is missing):
the same tensors as a local read, only the named tensors' bytes fetched
(counted from nginx's access log), and the CLI's options."""

import os
import shutil
import socket
import subprocess
import time

import numpy
import pytest

import hurray

NGINX = os.environ.get("NGINX_BIN", "/usr/sbin/nginx")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    """(http base URL, https base URL, CA file, www dir, access log)."""
    if not os.access(NGINX, os.X_OK) or shutil.which("openssl") is None:
        pytest.skip("nginx or openssl is not installed "
                    "(tools/install_deps.sh installs them)")
    work = tmp_path_factory.mktemp("nginx")
    www = work / "www"
    (work / "logs").mkdir()
    (work / "tmp").mkdir()
    www.mkdir()
    cert, key = work / "server.pem", work / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60)
    log = work / "logs" / "access.log"
    http_port, https_port = _free_port(), _free_port()
    temps = "\n".join(f"  {k}_temp_path {work}/tmp/{k};" for k in
                      ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # As root nginx would hand its temp dirs to "nobody" (chown fails in a
    # sandbox): keep the running user.
    import grp
    import pwd
    user = (f"{pwd.getpwuid(os.getuid()).pw_name} "
            f"{grp.getgrgid(os.getgid()).gr_name}")
    conf = work / "nginx.conf"
    conf.write_text(f"""daemon off;
master_process off;
user {user};
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/logs/error.log warn;
events {{ worker_connections 64; }}
http {{
  log_format bytes '$request_uri $status $body_bytes_sent $connection';
  access_log {log} bytes;
{temps}
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{http_port};
    listen 127.0.0.1:{https_port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    root {www};
  }}
}}
""")
    server = subprocess.Popen([NGINX, "-e", f"{work}/logs/error.log", "-p",
                               str(work), "-c", str(conf)],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", https_port), 0.2).close()
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail("nginx did not start: " +
                                (work / "logs" / "error.log").read_text())
                time.sleep(0.05)
        yield (f"http://127.0.0.1:{http_port}",
               f"https://127.0.0.1:{https_port}", str(cert), www, log)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def model(nginx):
    """Eight 256 KiB tensors (and the sample model) on the server."""
    _, _, _, www, _ = nginx
    rng = numpy.random.default_rng(15)
    tensors = {f"w{i}": hurray.from_numpy(
        rng.standard_normal((256, 256)).astype("f4")) for i in range(8)}
    path = www / "model.hrry"
    hurray.save(path, tensors, kv={"producer": "test_http"})
    return path


def _sent_since(log, lines_before):
    # nginx logs a request once it has sent the response, which may be just
    # after the client has read it: wait until the log stops growing.
    deadline = time.monotonic() + 5
    count, still_since = _lines(log), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - still_since < 0.3:
        time.sleep(0.05)
        now = _lines(log)
        if now != count:
            count, still_since = now, time.monotonic()
    lines = log.read_text().splitlines()[lines_before:]
    return sum(int(l.split()[2]) for l in lines), [l.split()[1] for l in lines]


def _lines(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_every_tensor_equals_a_local_read(nginx, model):
    _, https, ca, _, _ = nginx
    got = list(hurray.ingest(f"{https}/model.hrry", ca_file=ca))
    local = hurray.load(model)
    assert [n for n, _ in got] == [f"w{i}" for i in range(8)]  # file order
    for name, values in got:
        assert numpy.array_equal(values, local[name].dequantize()), name


def test_named_tensors_fetch_only_their_bytes(nginx, model):
    _, https, ca, _, log = nginx
    before = _lines(log)
    got = list(hurray.ingest(f"{https}/model.hrry", names=["w5", "w2"],
                             ca_file=ca, dequantize=False))
    assert [n for n, _ in got] == ["w2", "w5"]
    local = hurray.load(model)
    for name, t in got:
        assert isinstance(t, hurray.Tensor)
        assert numpy.array_equal(numpy.asarray(t), numpy.asarray(local[name]))
    sent, statuses = _sent_since(log, before)
    size = os.path.getsize(model)
    assert set(statuses) == {"206"}
    assert 2 * 256 * 256 * 4 <= sent < size // 2


def test_connections(nginx, model):
    """connections=N (issue 47): the same values; one kept-alive
    connection for every range with N = 1, more with N = 4 (six 1 MiB
    tensors read by ranges of 2 MiB and more)."""
    _, https, ca, www, log = nginx
    rng = numpy.random.default_rng(47)
    tensors = {f"b{i}": hurray.from_numpy(
        rng.standard_normal((512, 512)).astype("f4")) for i in range(6)}
    hurray.save(www / "big.hrry", tensors)
    local = hurray.load(www / "big.hrry")
    for n in (1, 4):
        before = _lines(log)
        got = list(hurray.ingest(f"{https}/big.hrry", ca_file=ca,
                                 connections=n))
        assert [name for name, _ in got] == [f"b{i}" for i in range(6)]
        for name, values in got:
            assert numpy.array_equal(values, local[name].dequantize()), name
        _sent_since(log, before)
        lines = log.read_text().splitlines()[before:]
        conns = {line.split()[3] for line in lines}
        assert {line.split()[1] for line in lines} == {"206"}
        if n == 1:
            assert len(conns) == 1, lines
        else:
            assert 1 < len(conns) <= 1 + n, lines
    with pytest.raises(ValueError):
        list(hurray.ingest(f"{https}/big.hrry", ca_file=ca, connections=33))
    with pytest.raises(TypeError):
        list(hurray.ingest(f"{https}/big.hrry", ca_file=ca, connections="4"))


def test_plain_http_and_options(nginx, model):
    http, https, ca, _, _ = nginx
    names = [n for n, _ in hurray.ingest(f"{http}/model.hrry", names=["w0"],
                                         headers={"X-Test": "1"},
                                         total_timeout=60)]
    assert names == ["w0"]
    with pytest.warns(UserWarning, match="NOT verified"):
        assert len(list(hurray.ingest(f"{https}/model.hrry", names=["w1"],
                                      insecure=True))) == 1
    with pytest.raises(ValueError):
        list(hurray.ingest(f"{https}/model.hrry", headers=["Host: evil"]))
    with pytest.raises(ValueError):
        list(hurray.ingest("model.hrry", ca_file=ca))


def test_refusals(nginx, model):
    _, https, ca, _, _ = nginx
    with pytest.raises(hurray.HurrayError, match="not trusted"):
        list(hurray.ingest(f"{https}/model.hrry"))  # self-signed, no ca_file
    with pytest.raises(hurray.HurrayError, match="no tensor named 'nope'"):
        list(hurray.ingest(f"{https}/model.hrry", names=["w1", "nope"],
                           ca_file=ca))
    with pytest.raises(hurray.HurrayError, match="HTTP 404"):
        list(hurray.ingest(f"{https}/missing.hrry", ca_file=ca))
