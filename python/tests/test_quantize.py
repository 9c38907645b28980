"""hurray.quantize: each scheme within its documented error bound, and the
result valid for every reader (it is written and read back)."""

import numpy
import pytest

import hurray

RNG = numpy.random.default_rng(11)
X = (RNG.standard_normal((32, 96)) * 3).astype("f4")


def _affine_bound(scale):
    return numpy.float32(scale) / 2 * (1 + 1e-5) + 1e-7


@pytest.mark.parametrize("dtype", [hurray.int8, hurray.uint8, hurray.int16,
                                   hurray.dtype.int4, hurray.dtype.uint4, hurray.dtype.int2])
def test_per_tensor(dtype):
    t = hurray.quantize(X, "per_tensor", dtype=dtype)
    err = numpy.abs(t.dequantize() - X).max()
    assert err <= _affine_bound(t.quantization.scale)
    hurray.decode_descriptor(t.encode())


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("symmetric", [True, False])
def test_per_channel(axis, symmetric):
    t = hurray.quantize(X, "per_channel", axis=axis, symmetric=symmetric)
    scales = numpy.frombuffer(t.buffers[1], dtype="<f4")
    shape = [1, 1]
    shape[axis] = -1
    err = numpy.abs(t.dequantize() - X)
    assert (err <= _affine_bound(scales).reshape(shape)).all()


@pytest.mark.parametrize("scale_type", [hurray.float32, hurray.float16,
                                        hurray.bfloat16])
@pytest.mark.parametrize("dtype,k", [(hurray.int8, 32), (hurray.dtype.int4, 64),
                                     (hurray.dtype.uint4, 16)])
def test_per_block_with_a_partial_block(scale_type, dtype, k):
    x = X[:, :90]  # 90 is not a multiple of the block size: padding
    t = hurray.quantize(x, "per_block", dtype=dtype, axis=1, block_size=k,
                        scale_type=scale_type)
    out = t.dequantize()
    assert out.shape == x.shape
    widest = numpy.abs(x).max() / (7 if dtype.bit_width == 4 else 127)
    scale_err = 0 if scale_type == hurray.float32 else 1 / 128
    assert numpy.abs(out - x).max() <= widest * (1 + scale_err) + 1e-6


def test_nf4_bound():
    t = hurray.quantize(X, "nf4", axis=1, block_size=32)
    absmax = numpy.frombuffer(t.buffers[1], dtype="<f4").reshape(32, 3)
    half_gap = numpy.diff(numpy.array(hurray.NF4_LUT)).max() / 2
    assert half_gap < 0.1520
    bound = numpy.repeat(absmax, 32, axis=1) * half_gap
    assert (numpy.abs(t.dequantize() - X) <= bound * (1 + 1e-6) + 1e-6).all()


@pytest.mark.parametrize("dtype", ["float8_e4m3", "float8_e5m2", "float4_e2m1",
                                   "float6_e2m3", "float6_e3m2", "int8", "int4"])
def test_mxfp(dtype):
    t = hurray.quantize(X, "mxfp", dtype=dtype, axis=1, block_size=32)
    out = t.dequantize()
    e = numpy.frombuffer(t.buffers[1], dtype=numpy.uint8).reshape(32, 3)
    scale = numpy.repeat(numpy.ldexp(1.0, e.astype(int) - 127), 32, axis=1)
    # Within half an element step at the top of the range, relative to the
    # block scale: the coarsest gap of each type (e2m1: 2 between 4 and 6).
    gap = {"float8_e4m3": 32, "float8_e5m2": 8192, "float4_e2m1": 2,
           "float6_e2m3": 0.5, "float6_e3m2": 4, "int8": 1, "int4": 1}[dtype]
    assert (numpy.abs(out - X) <= scale * gap / 2 + 1e-6).all()
    assert (e > 0).all() and (e < 255).all()


def test_mxfp_refuses_partial_blocks():
    with pytest.raises(ValueError):
        hurray.quantize(X[:, :90], "mxfp")


def test_all_zero_blocks_stay_valid():
    z = numpy.zeros((4, 64), dtype="f4")
    for scheme in ("per_tensor", "per_channel", "per_block", "nf4", "mxfp"):
        t = hurray.quantize(z, scheme, axis=1)
        assert not t.dequantize().any()


def test_deterministic():
    a = hurray.quantize(X, "per_block", dtype=hurray.dtype.int4, axis=1)
    b = hurray.quantize(X, "per_block", dtype=hurray.dtype.int4, axis=1)
    assert bytes(a.data) == bytes(b.data) and bytes(a.buffers[1]) == bytes(b.buffers[1])
