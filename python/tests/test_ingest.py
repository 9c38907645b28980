"""hurray.ingest through the library's one ingest call (stream::Ingest(),
issue 43 § 1) for every local source: paths, bytes, file objects and
sockets read through their own methods, with and without dequantization;
a source's exception raised once, Ctrl-C honoured. (tcp:// is in
test_net.py, http(s):// in test_http.py.)"""

import _thread
import io
import socket
import subprocess
import sys
import textwrap
import threading

import numpy
import pytest

import hurray


def _tensors():
    x = numpy.random.default_rng(7).standard_normal((4, 32)).astype("f4")
    return {"a": hurray.quantize(x, "nf4", axis=1, block_size=32),
            "b": hurray.from_numpy(x),
            "c": hurray.from_numpy(numpy.arange(6, dtype="i4").reshape(2, 3))}


def _stream(tensors):
    w = hurray.StreamWriter()
    for t in tensors.values():
        w.write(t)
    w.finish()
    return w.getvalue()


def test_a_hrry_path_dequantized_and_not(tmp_path):
    tensors = _tensors()
    hurray.save(tmp_path / "m.hrry", tensors)
    got = list(hurray.ingest(tmp_path / "m.hrry"))
    assert [n for n, _ in got] == list(tensors)
    for name, values in got:
        assert values.dtype == numpy.float32
        assert numpy.array_equal(values, tensors[name].dequantize()), name
    got = list(hurray.ingest(tmp_path / "m.hrry", dequantize=False))
    assert [n for n, _ in got] == list(tensors)
    for name, t in got:
        assert isinstance(t, hurray.Tensor)
        assert t.layout == tensors[name].layout
        assert numpy.array_equal(t.dequantize(), tensors[name].dequantize())


def test_names_of_a_file_come_in_file_order(tmp_path):
    hurray.save(tmp_path / "m.hrry", _tensors())
    got = [n for n, _ in hurray.ingest(tmp_path / "m.hrry", names=["c", "a"])]
    assert got == ["a", "c"]
    with pytest.raises(hurray.HurrayError, match="no tensor named 'zz'"):
        list(hurray.ingest(tmp_path / "m.hrry", names=["zz"]))


def test_a_missing_path_names_itself(tmp_path):
    with pytest.raises(hurray.FileError, match="none.hrry: cannot open"):
        list(hurray.ingest(tmp_path / "none.hrry"))


@pytest.mark.parametrize("wrap", [
    bytes, bytearray, memoryview, io.BytesIO,
    lambda b: io.BufferedReader(io.BytesIO(b), buffer_size=7),
])
def test_bytes_and_file_objects(wrap):
    tensors = _tensors()
    got = list(hurray.ingest(wrap(_stream(tensors))))
    assert [n for n, _ in got] == ["tensor_0", "tensor_1", "tensor_2"]
    for (_, values), t in zip(got, tensors.values()):
        assert numpy.array_equal(values, t.dequantize())


class _ReadOnly:
    """A file-like object with read() alone, a few bytes at a time."""

    def __init__(self, data, most=5):
        self._data, self._most = data, most

    def read(self, n):
        chunk = self._data[:min(n, self._most)]
        self._data = self._data[len(chunk):]
        return chunk


def test_an_object_with_read_alone_in_bounded_chunks():
    tensors = _tensors()
    got = dict(hurray.ingest(_ReadOnly(_stream(tensors)), dequantize=False))
    assert [t.shape for t in got.values()] == \
        [t.shape for t in tensors.values()]


def test_a_socket(tmp_path):
    tensors = _tensors()
    ours, theirs = socket.socketpair()
    data = _stream(tensors)

    def send():
        theirs.sendall(data)
        theirs.close()

    sender = threading.Thread(target=send)
    sender.start()
    try:
        got = list(hurray.ingest(ours, idle_timeout=30))
    finally:
        sender.join()
        ours.close()
    assert len(got) == 3
    # A socket that sends nothing: the idle deadline.
    ours, theirs = socket.socketpair()
    with ours, theirs, pytest.raises(hurray.StreamError, match="idle"):
        list(hurray.ingest(ours, idle_timeout=0.2))


def test_a_truncated_stream_gives_the_rule_and_offset():
    data = _stream(_tensors())
    with pytest.raises(hurray.StreamError) as e:
        list(hurray.ingest(io.BytesIO(data[:-3])))
    assert e.value.rule == "STREAM-EOF-BUFFER"
    assert e.value.offset is not None


class _Boom(Exception):
    pass


class _Failing:
    def __init__(self, data):
        self._data, self.calls = data, 0

    def read(self, n):
        self.calls += 1
        if self.calls == 3:
            raise _Boom("the source failed")
        chunk, self._data = self._data[:10], self._data[10:]
        return chunk


def test_an_exception_of_the_source_is_raised_once_as_is():
    it = hurray.ingest(_Failing(_stream(_tensors())))
    with pytest.raises(_Boom, match="the source failed"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("source, error, match", [
    (type("R", (), {"read": lambda self, n: None})(), hurray.StreamError,
     "returned None"),
    (type("R", (), {"readinto": lambda self, b: len(b) + 1})(),
     hurray.StreamError, "a count from 0 to"),
    (type("R", (), {"read": lambda self, n: "text"})(), TypeError,
     "not bytes"),
    (object(), TypeError, "needs readinto"),
])
def test_misbehaving_sources(source, error, match):
    with pytest.raises(error, match=match):
        list(hurray.ingest(source))


def test_ctrl_c_while_waiting_stops_the_run():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        it = hurray.ingest(ours, idle_timeout=None)
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            next(it)
        timer.join()
        it.close()  # the run is cancelled and its thread joined


def test_the_interpreter_exits_with_a_run_in_progress():
    # The generator is dropped while Python finalizes, with the reader
    # waiting to hand over the rest of a tensor: no hang.
    script = textwrap.dedent("""
        import socket, numpy, hurray
        w = hurray.StreamWriter()
        for i in range(3):
            w.write(hurray.from_numpy(numpy.arange(1000, dtype="f4")))
        w.finish()
        data = w.getvalue()
        a, b = socket.socketpair()
        a.sendall(data[:len(data) // 2 + 500])
        it = hurray.ingest(b, idle_timeout=None)
        print(next(it)[0])
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["tensor_0"]


def test_dropping_a_run_waiting_on_an_unbuffered_pipe_returns():
    # An io.FileIO is waited on (poll) before each read, so the cancelled
    # run stops without the pipe's writer sending more.
    script = textwrap.dedent("""
        import os, numpy, hurray
        w = hurray.StreamWriter()
        for i in range(3):
            w.write(hurray.from_numpy(numpy.arange(1000, dtype="f4")))
        w.finish()
        data = w.getvalue()
        r, wfd = os.pipe()
        os.write(wfd, data[:len(data) // 2 + 500])
        it = hurray.ingest(open(r, "rb", buffering=0))
        print(next(it)[0])
        it.close()
        print("closed")
        os.close(wfd)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["tensor_0", "closed"]


def test_ctrl_c_stops_a_run_waiting_for_a_silent_peer():
    # A tcp:// peer that accepts and never answers, no idle deadline: the
    # run is cancelled at once, not at the next chunk.
    script = textwrap.dedent("""
        import _thread, socket, threading, hurray
        server = socket.create_server(("127.0.0.1", 0))
        url = "tcp://127.0.0.1:%d/x" % server.getsockname()[1]
        threading.Timer(0.3, _thread.interrupt_main).start()
        try:
            next(hurray.ingest(url, idle_timeout=None))
        except KeyboardInterrupt:
            print("interrupted")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["interrupted"]


def test_dash_is_standard_input():
    script = ("import hurray\n"
              "print([n for n, _ in hurray.ingest('-')])\n")
    p = subprocess.run([sys.executable, "-c", script],
                       input=_stream(_tensors()), capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [b"['tensor_0',", b"'tensor_1',",
                                b"'tensor_2']"]


def test_options_that_do_not_fit_the_source(tmp_path):
    hurray.save(tmp_path / "m.hrry", _tensors())
    with pytest.raises(ValueError, match="http"):
        list(hurray.ingest(tmp_path / "m.hrry", ca_file="x.pem"))
    with pytest.raises(ValueError, match="tcp"):
        list(hurray.ingest(tmp_path / "m.hrry", max_open_streams=2))
    with pytest.raises(ValueError):
        list(hurray.ingest("tcp://no-port"))


# -- StreamReader over objects without a descriptor (issue 45) ----------------

class _Recording:
    """Records the sizes it is asked for; hands out at most 9 bytes."""

    def __init__(self, data, method):
        self._data, self.asked = data, []
        setattr(self, method, getattr(self, "_" + method))

    def _take(self, n):
        self.asked.append(n)
        chunk, self._data = self._data[:min(n, 9)], self._data[min(n, 9):]
        return chunk

    def _read(self, n):
        return self._take(n)

    def _recv(self, n):  # socket-like, without fileno()
        return self._take(n)

    def _readinto(self, buf):
        chunk = self._take(len(buf))
        buf[:len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("method", ["read", "recv", "readinto"])
def test_stream_reader_reads_objects_in_bounded_chunks(method):
    tensors = _tensors()
    source = _Recording(_stream(tensors), method)
    got = list(hurray.StreamReader(source, chunk_size=64))
    assert [t.shape for t in got] == [t.shape for t in tensors.values()]
    assert source.asked and max(source.asked) <= 64


def test_stream_reader_refuses_an_object_without_read_with_advice():
    with pytest.raises(TypeError, match=r"readinto\(buffer\), read\(n\)"):
        hurray.StreamReader(object())


# -- http:// from a server without byte ranges (Python's http.server) ---------

@pytest.fixture
def plain_http(tmp_path):
    import functools
    import http.server

    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(tmp_path))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


def test_a_server_without_ranges_is_read_forward(plain_http):
    root, url = plain_http
    tensors = _tensors()
    hurray.save(root / "m.hrry", tensors)
    (root / "s.hrs").write_bytes(_stream(tensors))
    # A .hrry names its tensors at its end: dequantized, they come then.
    got = list(hurray.ingest(f"{url}/m.hrry"))
    assert [n for n, _ in got] == list(tensors)
    for name, values in got:
        assert numpy.array_equal(values, tensors[name].dequantize()), name
    assert [n for n, _ in hurray.ingest(f"{url}/m.hrry", names=["c"])] == \
        ["c"]
    got = list(hurray.ingest(f"{url}/s.hrs", dequantize=False))
    assert [n for n, _ in got] == ["tensor_0", "tensor_1", "tensor_2"]
    with pytest.raises(hurray.HurrayError, match="404"):
        list(hurray.ingest(f"{url}/missing.hrry"))
