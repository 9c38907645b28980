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


# -- LIMIT-OPEN-STREAMS and LIMIT-SPOOL-BYTES (docs/network.md § Streams) ----

_INTERLEAVED_KEYS = ["layers.0.attn.q_proj.weight",
                     "layers.0.mlp.up_proj.weight", "norm.weight"]


@pytest.fixture
def interleaved(tmp_path, cli):
    """The sample model's answers to three pipelined requests, interleaved
    message by message (stream/net/testing/interleaving_serve)."""
    import os

    model = tmp_path / "sample.hrry"
    code, _, err = cli("pack", "-o", model, "--sample")
    assert code == 0, err
    root = os.environ.get("HURRAY_ROOT") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "stream", "net", "testing", "interleaving_serve")
    server = subprocess.Popen([path, str(model), ",".join(_INTERLEAVED_KEYS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()  # "listening on ADDR:PORT"
        assert line.startswith("listening on"), server.stderr.read()
        yield model, "tcp://" + line.split()[-1]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_defaults_accept_interleaved_answers(interleaved):
    model, url = interleaved
    got = dict(hurray.ingest(url, names=_INTERLEAVED_KEYS))
    local = hurray.load(model)
    assert list(got) == _INTERLEAVED_KEYS
    for name in _INTERLEAVED_KEYS:
        assert numpy.array_equal(got[name], local[name].dequantize()), name
    # Limits the answers stay within.
    got = list(hurray.ingest(url, names=_INTERLEAVED_KEYS, max_open_streams=3,
                             max_spool_bytes=1 << 20))
    assert [n for n, _ in got] == _INTERLEAVED_KEYS


def test_max_open_streams(interleaved):
    _, url = interleaved
    # Stream 2 opens while stream 1 is still open.
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.ingest(url, names=_INTERLEAVED_KEYS, max_open_streams=1))
    assert e.value.rule == "LIMIT-OPEN-STREAMS"


def test_max_spool_bytes(interleaved):
    _, url = interleaved
    # Stream 2's descriptor must be held while stream 1 is delivered.
    with pytest.raises(hurray.HurrayError) as e:
        list(hurray.ingest(url, names=_INTERLEAVED_KEYS, max_spool_bytes=16))
    assert e.value.rule == "LIMIT-SPOOL-BYTES"


@pytest.mark.parametrize("kwargs, error", [
    (dict(max_open_streams=0), ValueError),
    (dict(max_open_streams=1025), ValueError),
    (dict(max_open_streams=True), TypeError),
    (dict(max_open_streams="4"), TypeError),
    (dict(max_spool_bytes=0), ValueError),
    (dict(max_spool_bytes=(16 << 30) + 1), ValueError),
    (dict(max_spool_bytes=1.5), TypeError),
])
def test_net_limits_out_of_range(kwargs, error):
    with pytest.raises(error):
        list(hurray.ingest("tcp://127.0.0.1:1/x", **kwargs))


def test_net_limits_are_for_tcp(tmp_path, cli):
    model = tmp_path / "sample.hrry"
    code, _, err = cli("pack", "-o", model, "--sample")
    assert code == 0, err
    with pytest.raises(ValueError):
        list(hurray.ingest(model, max_open_streams=4))
    with pytest.raises(ValueError):
        list(hurray.ingest("https://127.0.0.1:1/m.hrry", max_spool_bytes=64))
