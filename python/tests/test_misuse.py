"""A caller misusing the module, or another process changing its input,
gets a Python exception with a clear class and message: never a signal,
never a silent wrong answer (issue 46, items 6 to 10)."""

import io
import os
import subprocess
import sys
import textwrap

import numpy
import pytest

import hurray

# -- item 6: a file truncated under an open HrryFile --------------------------

_TRUNCATE = textwrap.dedent("""
    import os, sys, numpy, hurray
    path, cut, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    big = numpy.arange(1 << 20, dtype="f4")  # 4 MiB: many pages past the cut
    hurray.save(path, {"a": hurray.from_numpy(big),
                       "b": hurray.from_numpy(big + 1)}, kv={"k": "v" * 100})
    original = open(path, "rb").read()
    f = hurray.open(path)
    kept = f["a"]
    os.truncate(path, cut)
    # A tensor read before the cut owns its buffers: no view of the file.
    assert numpy.asarray(kept)[-1] == (1 << 20) - 1
    assert not numpy.asarray(kept).flags.writeable
    if what == "restored":
        try:
            f["b"]
            sys.exit(4)
        except hurray.FileError:
            pass
        # The writer puts every byte back; the pages this process met past
        # the cut read as zeros in its map, so the open file stays refused
        # rather than serve them.
        with open(path, "r+b") as w:
            w.write(original)
    try:
        if what in ("tensor", "restored"):
            t = f["b"]
        elif what == "kv":
            t = f.kv
        else:
            t = hurray.load(path)
    except hurray.FileError as e:
        print("FileError", e)
        sys.exit(0)
    except hurray.HurrayError as e:
        print("HurrayError", type(e).__name__, e)
        sys.exit(0)
    print("no error", type(t), numpy.asarray(t)[-4:] if what != "kv" else t)
    sys.exit(3)
""")


@pytest.mark.parametrize("cut,what", [
    (8192, "tensor"),      # the buffers gone, the header still there
    (6 << 20, "tensor"),   # the second tensor's buffer cut in its middle
    (8192, "kv"),          # the KV section (at the end) gone
    (8192, "load"),        # opened again after the cut: refused at open
    (0, "tensor"),
    (8192, "restored"),
])
def test_a_file_truncated_while_open_raises_instead_of_sigbus(tmp_path, cut,
                                                              what):
    # In a child: on a SIGBUS the child dies (returncode -7) and this test
    # fails, instead of the signal killing pytest.
    p = subprocess.run([sys.executable, "-c", _TRUNCATE,
                        str(tmp_path / "m.hrry"), str(cut), what],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "Error" in p.stdout


# -- item 7: StreamReader's chunk size ------------------------------------------

def _file(data):
    """A file object over bytes (a BytesIO itself is refused: pass its
    bytes)."""
    return io.BufferedReader(io.BytesIO(data))


def _stream(n=3):
    w = hurray.StreamWriter()
    for i in range(n):
        w.write(hurray.from_numpy(numpy.full(4, i, dtype="f4")))
    w.close()
    return w.getvalue()


@pytest.mark.parametrize("bad", [0, 1.5, "8", True])
def test_stream_reader_refuses_a_chunk_size_that_reads_nothing(bad):
    with pytest.raises((ValueError, TypeError)):
        hurray.StreamReader(_file(_stream()), chunk_size=bad)
    with pytest.raises(ValueError):
        hurray.StreamReader(_file(_stream()), chunk_size=0)


def test_a_negative_chunk_size_reads_a_file_object_whole():
    got = list(hurray.StreamReader(_file(_stream()), chunk_size=-1))
    assert [float(numpy.asarray(t)[0]) for t in got] == [0.0, 1.0, 2.0]
    for size in (1, 7):
        assert len(list(hurray.StreamReader(_file(_stream()),
                                            chunk_size=size))) == 3


# -- item 8: buffers that are not plain numbers ---------------------------------

@pytest.mark.parametrize("array", [
    numpy.array([object(), object()], dtype=object),
    numpy.array(["ab", "cd"]),
    numpy.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]),
    numpy.zeros(2, dtype="V8"),
    numpy.array([b"abcd", b"efgh"]),
    numpy.zeros(2, dtype="datetime64[s]").view("V8"),
])
def test_tensor_refuses_buffers_that_are_not_plain_numbers(array):
    with pytest.raises(TypeError):
        hurray.Tensor(array, hurray.uint8, [array.nbytes])
    with pytest.raises(TypeError):
        hurray.Tensor(b"\0" * 16, hurray.uint8, [16], aux_buffers=[array])


def test_tensor_takes_plain_number_buffers():
    for a in (numpy.zeros(4, "f4"), numpy.zeros(16, "u1"), numpy.zeros(8, ">i2"),
              bytearray(16), memoryview(b"\0" * 16), numpy.zeros(2, "c8")):
        t = hurray.Tensor(a, hurray.uint8, [memoryview(a).nbytes])
        assert t.buffer(0).nbytes == memoryview(a).nbytes


# -- item 9: quantize's axis ------------------------------------------------------

@pytest.mark.parametrize("scheme", ["per_channel", "per_block", "nf4", "mxfp"])
def test_quantize_refuses_an_axis_out_of_range(scheme):
    x = numpy.ones((4, 64), dtype="f4")
    for axis in (2, 5, -3):
        with pytest.raises(numpy.AxisError) as e:
            hurray.quantize(x, scheme, axis=axis)
        assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError):
        hurray.quantize(x, scheme, axis=1.0)


def test_quantize_counts_negative_axes_as_numpy_does():
    x = numpy.random.default_rng(1).standard_normal((4, 64)).astype("f4")
    for scheme in ("per_channel", "per_block", "nf4", "mxfp"):
        a = hurray.quantize(x, scheme, axis=-1)
        b = hurray.quantize(x, scheme, axis=1)
        assert a.quantization == b.quantization
        assert numpy.array_equal(a.dequantize(), b.dequantize())
    a = hurray.quantize(x, "per_channel", axis=-2)
    assert a.quantization == hurray.quantize(x, "per_channel", axis=0).quantization


# -- item 10: the smaller ones ------------------------------------------------------

class _NegativeReader(io.RawIOBase):
    def readable(self):
        return True

    def readinto(self, b):
        return -1


class _TooLongReader(_NegativeReader):
    def readinto(self, b):
        return len(b) + 5


@pytest.mark.parametrize("cls", [_NegativeReader, _TooLongReader])
def test_a_reader_returning_an_impossible_count_is_a_stream_error(cls):
    with pytest.raises(hurray.StreamError, match="readinto"):
        list(hurray.StreamReader(cls()))


def test_a_reader_returning_a_non_bytes_is_a_type_error():
    class Strings:
        def read(self, n):
            return "text"

    with pytest.raises(TypeError):
        list(hurray.StreamReader(Strings()))


@pytest.mark.parametrize("value,error", [
    (1 << 64, OverflowError),
    (-(1 << 63) - 1, OverflowError),
    ([1, 1 << 64], OverflowError),
    ([1, "a"], TypeError),
    (["a", 1], TypeError),
    ([1.0, 2], TypeError),
    ([True, 1], TypeError),
    ([1, True], TypeError),
    ([b"a"], TypeError),
    ({"a": 1}, TypeError),
])
def test_kv_values_out_of_range_or_mixed(tmp_path, value, error):
    path = tmp_path / "m.hrry"
    with pytest.raises(error):
        hurray.save(path, {"x": hurray.zeros(2)}, kv={"k": value})
    assert not path.exists()


def test_kv_integer_edges_still_round_trip(tmp_path):
    path = tmp_path / "m.hrry"
    kv = {"max": (1 << 64) - 1, "min": -(1 << 63), "list": [-(1 << 63), (1 << 63) - 1]}
    hurray.save(path, {"x": hurray.zeros(2)}, kv=kv)
    assert hurray.open(path).kv == kv


@pytest.mark.parametrize("shape", [[4.5], "4", b"4", [numpy.float32(4)], ["4"],
                                   4.0])
def test_tensor_refuses_a_shape_that_is_not_integers(shape):
    with pytest.raises(TypeError):
        hurray.Tensor(numpy.zeros(4, "f4"), hurray.float32, shape)


@pytest.mark.parametrize("call", [
    lambda: hurray.Tensor(bytes(32), hurray.float32, [4], byte_offset=4.5),
    lambda: hurray.Tensor(bytes(32), hurray.float32, [4], byte_offset="4"),
    lambda: hurray.Device("cuda", 1.5),
    lambda: hurray.quantize(numpy.ones((2, 64), "f4"), "per_block",
                            block_size=16.5),
    lambda: hurray.quantize(numpy.ones((2, 64), "f4"), "nf4", block_size=True),
])
def test_other_integer_arguments_refuse_floats(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("size", [0, -32])
def test_quantize_refuses_a_block_size_below_one(size):
    with pytest.raises(ValueError, match="block_size"):
        hurray.quantize(numpy.ones((2, 64), "f4"), "per_block", block_size=size)


def test_tensor_takes_integer_like_shapes():
    t = hurray.Tensor(numpy.zeros(4, "f4"), hurray.float32, [numpy.int64(4)])
    assert t.shape == (4,)
    assert hurray.Tensor(numpy.zeros(4, "f4"), hurray.float32, (2, 2)).shape == (2, 2)


def test_buffer_index_out_of_range_is_an_index_error():
    q = hurray.quantize(numpy.ones((2, 32), "f4"), "per_block")
    assert q.buffer(q.buffer_count - 1).nbytes > 0
    for i in (-1, q.buffer_count, 1 << 70):
        with pytest.raises(IndexError):
            q.buffer(i)
    with pytest.raises(TypeError):
        q.buffer(0.0)


def test_load_takes_one_name_as_a_str(tmp_path):
    path = tmp_path / "m.hrry"
    hurray.save(path, {"xy": hurray.zeros(2), "x": hurray.ones(2)})
    assert list(hurray.load(path, names="xy")) == ["xy"]
    assert list(hurray.load(path, names=["x"])) == ["x"]
    with pytest.raises(KeyError):
        hurray.load(path, names="y")
    with pytest.raises(TypeError):
        hurray.load(path, names=[b"x"])


def test_a_closed_file_raises_value_error(tmp_path):
    path = tmp_path / "m.hrry"
    hurray.save(path, {"x": hurray.zeros(2)}, kv={"a": 1})
    with hurray.open(path) as f:
        kept = f["x"]
    for use in (lambda: f["x"], lambda: f.kv, lambda: f.names,
                lambda: len(f), lambda: "x" in f, lambda: list(f),
                lambda: list(f.items())):
        with pytest.raises(ValueError, match="closed"):
            use()
    assert f.closed
    assert numpy.asarray(kept).tolist() == [0.0, 0.0]


_FIFO = textwrap.dedent("""
    import sys, hurray
    try:
        hurray.load(sys.argv[1])
    except hurray.FileError as e:
        print("FileError", e)
""")


def test_load_of_a_fifo_without_a_writer_does_not_block(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # In a child: a load that blocks holds the GIL, so only a process
    # boundary lets the test time it out.
    try:
        p = subprocess.run([sys.executable, "-c", _FIFO, str(fifo)],
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("hurray.load blocked on a FIFO without a writer")
    assert p.returncode == 0, p.stderr
    assert "FileError" in p.stdout and "not a regular file" in p.stdout
    with pytest.raises(hurray.FileError, match="directory"):
        hurray.open(tmp_path)
