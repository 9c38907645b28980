"""The native protocol: Tensor.__hurray__() hands a whole tensor (encoded
descriptor and every buffer) to another binding in one "hurray_tensor"
capsule; hurray.from_hurray takes one back, without copying (issue 45)."""

import gc
import subprocess
import sys
import textwrap

import numpy
import pytest

import hurray
from hurray import _hurray


def _coo():
    return hurray.sparse_coo(numpy.array([5.0, 7.0], "f4"),
                             numpy.array([[0, 0], [1, 1]], "u8"), [2, 2])


def test_round_trips_share_memory_in_every_layout():
    data = numpy.arange(6, dtype="f4")
    t = hurray.from_numpy(data.reshape(2, 3))
    back = hurray.from_hurray(t)
    assert back.shape == (2, 3) and back.dtype == hurray.float32
    assert numpy.shares_memory(numpy.asarray(back), data)
    numpy.asarray(back)[0, 0] = 9.0  # the producer's memory was writable
    assert data[0] == 9.0

    coo = hurray.from_hurray(_coo())
    assert coo.layout == hurray.CooLayout(2) and coo.buffer_count == 2
    assert coo.indices.tolist() == [[0, 0], [1, 1]]

    q = hurray.quantize(numpy.ones((4, 32), "f4"), "per_block", block_size=16)
    qb = hurray.from_hurray(q)
    assert qb.quantization == q.quantization and qb.buffer_count == q.buffer_count
    assert numpy.array_equal(qb.dequantize(), q.dequantize())

    i4 = hurray.Tensor(bytes(8), hurray.dtype.int4, [16])
    assert hurray.from_hurray(i4).dtype == hurray.dtype.int4


def test_read_only_memory_stays_read_only(tmp_path):
    hurray.save(tmp_path / "m.hrry", {"x": hurray.zeros(4, dtype=hurray.float32)})
    loaded = hurray.load(tmp_path / "m.hrry")["x"]
    back = hurray.from_hurray(loaded)
    with pytest.raises(ValueError):
        numpy.asarray(back)[0] = 1.0


def test_each_call_is_a_fresh_capsule_consumed_once():
    t = hurray.zeros(4)
    a, b = t.__hurray__(), t.__hurray__()
    assert a is not b
    assert "hurray_tensor" in repr(a) and "hurray_buffer" not in repr(a)
    assert not hasattr(t, "__hurray_buffer__")
    assert not hasattr(hurray, "from_hurray_buffer")

    class Replays:
        def __hurray__(self):
            return a

    assert hurray.from_hurray(Replays()).shape == (4,)
    with pytest.raises(TypeError, match="unconsumed"):
        hurray.from_hurray(Replays())  # a consumed capsule is not reused
    del a, b
    gc.collect()


def test_non_participants_and_lying_producers_are_refused():
    for obj in (object(), 42, numpy.zeros(2), b"x"):
        with pytest.raises(TypeError):
            hurray.from_hurray(obj)

    class NotACapsule:
        def __hurray__(self):
            return object()

    with pytest.raises(TypeError):
        hurray.from_hurray(NotACapsule())

    t = hurray.zeros(4, dtype=hurray.float32)

    class ShortBuffer:
        def __hurray__(self):
            return _hurray.make_tensor_capsule(t.encode(), [bytes(3)])

    with pytest.raises(hurray.BufferError):
        hurray.from_hurray(ShortBuffer())

    class Garbage:
        def __hurray__(self):
            return _hurray.make_tensor_capsule(b"not a descriptor", [])

    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.from_hurray(Garbage())


@pytest.mark.parametrize("body", [
    "t = hurray.zeros(4); c = t.__hurray__()",
    "import numpy; t = hurray.sparse_coo(numpy.ones(2, 'f4'), "
    "numpy.array([[0, 0], [1, 1]], 'u8'), [2, 2]); c = t.__hurray__()",
    "t = hurray.zeros(4); kept = hurray.from_hurray(t)",
    "c = hurray.zeros(4).__hurray__(); del c",
    "c = hurray.zeros(4).__hurray__(); import sys; sys.modules['keep'] = c",
])
def test_the_interpreter_exits_cleanly_with_capsules_alive(body):
    p = subprocess.run([sys.executable, "-c",
                        textwrap.dedent("import hurray\n" + body +
                                        "\nprint('done')")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "done"
