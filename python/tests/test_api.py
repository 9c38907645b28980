"""The reference Python API's behaviours this package keeps (names, types,
errors), written as our own tests."""

import numpy
import pytest

import hurray


def test_dtypes():
    assert hurray.float32 is hurray.dtype.float32 is hurray.Dtype.from_name("float32")
    assert hurray.float32.bit_width == 32 and hurray.float32.is_array_api
    assert hurray.dtype.int4.bit_width == 4 and not hurray.dtype.int4.is_array_api
    assert not hasattr(hurray, "int4")  # Tier 2: on hurray.dtype only
    assert {hurray.float32: 1}[hurray.dtype.from_tag(0x03)] == 1
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.Dtype.from_name("not_a_type")


def test_devices():
    assert hurray.Device("cpu") == hurray.device.cpu
    assert hurray.device.cpu.device_id == 0
    assert hurray.Device("cuda", 1).device_id == 1
    assert {hurray.device.cpu: 1}[hurray.Device("cpu")] == 1
    with pytest.raises(ValueError):
        hurray.Device("abacus")


def test_error_hierarchy():
    assert issubclass(hurray.InvalidDescriptorError, ValueError)
    assert issubclass(hurray.BufferError, ValueError)
    assert not issubclass(hurray.BufferError, BufferError)
    assert issubclass(hurray.UnsupportedError, NotImplementedError)
    assert issubclass(hurray.InternalError, RuntimeError)
    assert issubclass(hurray.FileError, OSError)
    assert issubclass(hurray.StreamError, hurray.InvalidDescriptorError)


def test_creation_functions():
    assert hurray.zeros([3, 4]).dtype == hurray.float64
    assert hurray.ones([2, 3], dtype=hurray.float32).dtype == hurray.float32
    assert list(numpy.asarray(hurray.full([4], 7.0, dtype=hurray.float32))) == [7.0] * 4
    assert hurray.empty([5, 5], dtype=hurray.int32).shape == (5, 5)
    src = hurray.ones([3, 3], dtype=hurray.float32)
    for like in (hurray.zeros_like(src), hurray.ones_like(src),
                 hurray.full_like(src, -1.0), hurray.empty_like(src)):
        assert like.shape == src.shape and like.dtype == src.dtype
    assert hurray.arange(5).dtype == hurray.int64
    assert list(numpy.asarray(hurray.arange(0.0, 1.0, 0.25))) == [0, 0.25, 0.5, 0.75]
    assert hurray.linspace(0.0, 1.0, 4, endpoint=False).shape == (4,)
    assert numpy.array_equal(numpy.asarray(hurray.eye(3, k=1, dtype=hurray.int32)),
                             numpy.eye(3, k=1, dtype=numpy.int32))
    assert hurray.asarray([[1, 2], [3, 4]], dtype=hurray.int32).shape == (2, 2)
    t = hurray.zeros([2])
    assert hurray.asarray(t) is t
    assert hurray.from_dlpack(numpy.arange(3.0)).dtype == hurray.float64
    with pytest.raises(hurray.UnsupportedError):
        hurray.zeros([4], dtype=hurray.dtype.int4)


def test_layout_objects():
    dense = hurray.Tensor(bytes(16), hurray.float32, [4])
    lay = dense.layout
    assert (lay.name, lay.tag, lay.buffer_count, lay.is_dense) == ("row_major", 1, 1, True)
    assert hurray.CsrLayout(nnz=2) == hurray.CsrLayout(nnz=2) != hurray.CsrLayout(nnz=3)
    assert len({hurray.CooLayout(nnz=1), hurray.CooLayout(nnz=1)}) == 1


def test_sparse_component_views():
    vals = numpy.array([5.0, 7.0], dtype="f4")
    cols = numpy.array([0, 1], dtype="<u8")
    ptr = numpy.array([0, 1, 2], dtype="<u8")
    csr = hurray.Tensor(vals, hurray.float32, [2, 2], aux_buffers=[cols, ptr],
                        layout=hurray.CsrLayout(nnz=2))
    assert list(csr.values) == [5.0, 7.0]
    assert list(csr.col_indices) == [0, 1] and list(csr.row_ptr) == [0, 1, 2]
    assert csr.buffer(2).nbytes == 24
    with pytest.raises(AttributeError):
        hurray.Tensor(bytes(16), hurray.float32, [4]).row_ptr


def test_spec_wins_over_the_reference_on_zero_point_range():
    # The reference builds an int8 tensor with zero point 128; the spec's
    # QNT-PTA-02 keeps the zero point inside the storage type (-128..127).
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(8), hurray.int8, [2, 4],
                      quantization=hurray.PerTensorAffine(0.02, 128))
    assert e.value.rule == "QNT-PTA-02"
    hurray.Tensor(bytes(8), hurray.uint8, [2, 4],
                  quantization=hurray.PerTensorAffine(0.02, 128))
