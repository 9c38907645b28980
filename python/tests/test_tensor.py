"""Tensors: construction checks, properties, numpy, dequantization."""

import struct

import numpy
import pytest

import hurray


def test_properties():
    buf = struct.pack("6f", *range(6))
    t = hurray.Tensor(buf, hurray.float32, [2, 3])
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6
    assert t.dtype == hurray.float32 and t.dtype is hurray.dtype.float32
    assert t.device == hurray.device.cpu and t.device.kind == "cpu"
    assert t.layout == hurray.RowMajorLayout()
    assert t.quantization is None and t.statistics is None and t.shard is None
    assert t.buffer_count == 1 and t.buffer_sizes == (24,)
    assert not hasattr(t, "__array_namespace__")
    with pytest.raises(NotImplementedError):
        t.T


def test_explicit_device():
    t = hurray.Tensor(bytes(24), hurray.float32, [2, 3], hurray.Device("cuda", 0))
    assert t.device.kind == "cuda"


def test_buffer_too_small_is_a_buffer_error():
    with pytest.raises(hurray.BufferError) as e:
        hurray.Tensor(bytes(8), hurray.float32, [2, 3])
    assert e.value.rule.startswith("BUF-SZ")
    assert isinstance(e.value, hurray.InvalidDescriptorError)


def test_sub_byte_sizes():
    t = hurray.Tensor(bytes([0xAB, 0xCD]), hurray.dtype.int4, [4])
    assert t.size == 4 and t.dtype.bit_width == 4
    with pytest.raises(hurray.BufferError):
        hurray.Tensor(bytes(1), hurray.dtype.int4, [4])


def test_placement_is_checked_against_the_buffers_given():
    q = hurray.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1)
    # Buffer 1 was never given: the table is one buffer short (BUF-03) ...
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(8), hurray.int8, [2, 4], quantization=q)
    assert e.value.rule == "BUF-03" and e.value.offset is not None
    # ... and with the right count, an index past it names no buffer.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(8), hurray.int8, [2, 4], aux_buffers=[bytes(8)],
                      quantization=hurray.PerChannelAffine.symmetric(
                          axis=0, scale_buffer_index=7))
    assert e.value.rule == "QNT-PLC-01"
    t = hurray.Tensor(bytes(8), hurray.int8, [2, 4], aux_buffers=[bytes(8)],
                      quantization=q)
    assert t.buffer_count == 2
    # Index 0 is the data buffer: a parameter buffer must not alias it.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(8), hurray.int8, [2, 4], aux_buffers=[bytes(8)],
                      quantization=hurray.PerChannelAffine.symmetric(
                          axis=0, scale_buffer_index=0))
    assert e.value.rule.startswith("QNT-")


def test_scale_buffer_size_is_checked():
    q = hurray.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1)
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(8), hurray.int8, [2, 4], aux_buffers=[bytes(4)],
                      quantization=q)
    assert e.value.rule.startswith("QNT-PCA")


def test_nf4_over_int4_is_built_but_never_written():
    t = hurray.Tensor(bytes(2048), hurray.dtype.int4, [64, 64],
                      aux_buffers=[bytes(256)],
                      quantization=hurray.NF4(axis=0, block_size=64,
                                              scale_buffer_index=1))
    for write in (t.encode, lambda: hurray.StreamWriter().write(t),
                  t.dequantize):
        with pytest.raises(hurray.InvalidDescriptorError) as e:
            write()
        assert e.value.rule == "QNT-NF4-05"


def test_sections():
    stats = hurray.Statistics(nnz=6, value_min=-1.0, value_max=1.0,
                              value_abs_max=1.0)
    assert stats.computed_mask == 0x05 and stats.value_mean is None
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.Statistics(value_min=-1.0)
    shard = hurray.Shard(parent_shape=[4, 4], shard_offset=[2, 0])
    t = hurray.Tensor(bytes(32), hurray.float32, [2, 4], shard=shard,
                      statistics=stats)
    assert t.shard == shard and t.statistics == stats
    back, _ = hurray.decode_descriptor(t.encode())
    assert back.shard == shard and back.statistics == stats


def test_numpy_views_without_copy():
    a = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    t = hurray.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == hurray.float32
    v = numpy.asarray(t)
    assert numpy.array_equal(v, a)
    a[0, 0] = 42
    assert numpy.asarray(t)[0, 0] == 42  # shares the memory
    assert numpy.array_equal(numpy.from_dlpack(t), a)
    assert numpy.asarray(t, dtype=numpy.float64).dtype == numpy.float64


def test_column_major_and_strided_views():
    a = numpy.arange(6, dtype=numpy.int16).reshape(2, 3)
    col = hurray.Tensor(a.T.copy().tobytes(), hurray.int16, [2, 3],
                        layout=hurray.ColumnMajorLayout())
    assert numpy.array_equal(numpy.asarray(col), a)
    strided = hurray.Tensor(a.tobytes(), hurray.int16, [3, 2],
                            layout=hurray.StridedLayout([1, 3]))
    assert numpy.array_equal(numpy.asarray(strided), a.T)


def test_zeros_and_arange():
    z = hurray.zeros((4, 4), dtype=hurray.float32)
    assert z.shape == (4, 4) and not numpy.asarray(z).any()
    r = hurray.arange(4, dtype=hurray.int32)
    assert list(numpy.asarray(r)) == [0, 1, 2, 3] and r.dtype == hurray.int32


def test_dequantize_per_channel_values():
    # x = scale[c] · (q − zp[c]): written out by hand, not by our code.
    q = numpy.array([[1, -2, 3], [10, 20, -30]], dtype=numpy.int8)
    scales = numpy.array([0.5, 0.25], dtype="<f4")
    zps = numpy.array([1, -2], dtype="<i4")
    t = hurray.Tensor(q.tobytes(), hurray.int8, [2, 3],
                      aux_buffers=[scales.tobytes(), zps.tobytes()],
                      quantization=hurray.PerChannelAffine.asymmetric(
                          axis=0, scale_buffer_index=1,
                          zero_point_buffer_index=2))
    expect = numpy.array([[0.0, -1.5, 1.0], [3.0, 5.5, -7.0]], dtype=numpy.float32)
    out = t.dequantize()
    assert out.dtype == numpy.float32 and numpy.array_equal(out, expect)
    assert numpy.array_equal(t.dequantize(numpy.float16), expect.astype(numpy.float16))
    bf = t.dequantize("bfloat16")
    assert bf.dtype == numpy.uint16
    assert numpy.array_equal((bf.astype(numpy.uint32) << 16).view(numpy.float32), expect)


def test_dequantize_nf4_uses_the_table():
    codes = numpy.arange(16, dtype=numpy.uint8)
    packed = (codes[0::2] | (codes[1::2] << 4)).tobytes()
    t = hurray.Tensor(packed, hurray.dtype.uint4, [16],
                      aux_buffers=[struct.pack("<f", 2.0)],
                      quantization=hurray.NF4(axis=0, block_size=16,
                                              scale_buffer_index=1))
    assert numpy.array_equal(t.dequantize(),
                             2.0 * numpy.array(hurray.NF4_LUT, dtype=numpy.float32))


def test_plain_tensors_convert():
    a = numpy.array([[1.5, -2.0], [3.25, 0.0]], dtype=numpy.float16)
    assert numpy.array_equal(hurray.from_numpy(a).dequantize(), a.astype(numpy.float32))
    bf = numpy.array([0x3F80, 0xC000], dtype="<u2")  # 1.0, -2.0
    t = hurray.Tensor(bf.tobytes(), hurray.bfloat16, [2])
    assert list(t.dequantize()) == [1.0, -2.0]
    e4m3 = hurray.Tensor(bytes([0x38, 0xB8]), hurray.dtype.float8_e4m3, [2])
    assert list(e4m3.dequantize()) == [1.0, -1.0]
    f4 = hurray.Tensor(bytes([0x2A]), hurray.dtype.float4_e2m1, [2])  # 0xA, 0x2
    assert list(f4.dequantize()) == [-1.0, 1.0]


def test_dequantize_releases_the_gil():
    import threading
    import time

    x = numpy.random.default_rng(1).standard_normal((2048, 2048)).astype("f4")
    t = hurray.quantize(x, "per_block", dtype=hurray.dtype.int4, block_size=32)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0)

    th = threading.Thread(target=tick)
    th.start()
    try:
        for _ in range(5):
            before = len(ticks)
            t.dequantize()
            # With the GIL held for the whole call the other thread could not
            # run at all during it; released, it runs.
            if len(ticks) > before:
                break
        else:
            pytest.fail("no other Python thread ran during dequantize()")
    finally:
        stop.set()
        th.join()
