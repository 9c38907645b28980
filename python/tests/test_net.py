"""hurray.ingest over the network protocol, against the C++ `hurray serve`
on loopback."""

import subprocess

import numpy
import pytest

import hurray


@pytest.fixture
def served(tmp_path, cli):
    """A sample model served on 127.0.0.1 by `hurray serve --port 0`."""
    import os

    model = tmp_path / "sample.hrry"
    code, _, err = cli("pack", "-o", model, "--sample")
    assert code == 0, err
    path = os.environ.get("HURRAY_CLI") or os.path.join(
        os.environ["HURRAY_ROOT"], "tools", "hurray")
    server = subprocess.Popen([path, "serve", str(model), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()  # "listening on ADDR:PORT"
        assert line.startswith("listening on"), server.stderr.read()
        yield model, "tcp://" + line.split()[-1]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_every_tensor_equals_a_local_read(served):
    model, url = served
    got = dict(hurray.ingest(url))
    local = hurray.load(model)
    assert sorted(got) == sorted(local)
    for name, t in local.items():
        assert numpy.array_equal(got[name], t.dequantize()), name


def test_named_tensors_and_tensors_undequantized(served):
    model, url = served
    names = hurray.open(model).names[:2]
    got = list(hurray.ingest(url + "/" + ",".join(names), dequantize=False))
    assert [n for n, _ in got] == names
    assert all(isinstance(t, hurray.Tensor) for _, t in got)
    assert [n for n, _ in hurray.ingest(url, names=names[1:])] == names[1:]


def test_unknown_name_and_refused_connection(served):
    _, url = served
    with pytest.raises(hurray.HurrayError):
        list(hurray.ingest(url + "/no-such-tensor"))
    with pytest.raises(hurray.StreamError) as e:
        list(hurray.ingest("tcp://127.0.0.1:1", connect_timeout=2))
    assert e.value.rule == "STREAM-IO"
    with pytest.raises(ValueError):
        list(hurray.ingest("tcp://no-port"))


def test_abandoned_iteration_releases_the_session(served):
    _, url = served
    it = hurray.ingest(url)
    next(it)
    it.close()  # the loader thread is cancelled and joined, no hang
