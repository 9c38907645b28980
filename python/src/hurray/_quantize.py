"""``hurray.quantize``: float arrays to quantized tensors, in any of the
five schemes, rounding to nearest.

Error bounds (each element x inside the range its scale covers):
- affine schemes (per-tensor, per-channel, per-block): |x − x̂| ≤ scale / 2,
  scale = absmax / qmax (symmetric) or (max − min) / (qmax − qmin);
- NF4: |x − x̂| ≤ absmax · 0.1520, half the widest gap between two NF4
  levels (−1.0 to −0.6962);
- MXFP: |x − x̂| ≤ half the gap between the two element values around
  x / 2^(e−127), times 2^(e−127), with e chosen so that the block's absmax
  fits the element type's largest finite value.
Ties go to the even code. Scales that would be zero (an all-zero channel or
block) are 1, so every tensor written is valid.
"""

import operator

import numpy

from . import _hurray
from ._dtype import dtype as _dtype
from ._quantization import (MXFP, NF4, PerBlockAffine, PerChannelAffine,
                            PerTensorAffine)
from ._tensor import Tensor

__all__ = ["quantize"]

_INT_RANGE = {"int8": (-128, 127), "uint8": (0, 255),
              "int16": (-32768, 32767), "uint16": (0, 65535),
              "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
              "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1),
              "uint2": (0, 3)}
_MXFP_TYPES = ("float8_e4m3", "float8_e5m2", "float4_e2m1", "float6_e2m3",
               "float6_e3m2", "int8", "int4")


def quantize(array, scheme="per_tensor", dtype=None, axis=None, block_size=None,
             symmetric=None, scale_type=_dtype.float32):
    """Quantizes a float array into a row-major Tensor.

    scheme: "per_tensor", "per_channel", "per_block", "nf4" or "mxfp".
    dtype: storage type (default int8 for affine, uint4 for NF4,
    float8_e4m3 for MXFP). axis: the channel axis (default 0) or the axis
    blocks run along (default the last, where a weight matrix's inputs are).
    symmetric: zero points all 0 (default: True for
    signed storage, False for unsigned). block_size: per-block (default 32),
    NF4 (64), MXFP (32). scale_type: per-block only (float32, float16,
    bfloat16). Deterministic; the result decodes, validates and dequantizes
    with every reader of the format.
    """
    x = numpy.asarray(array, dtype=numpy.float32)
    if not numpy.all(numpy.isfinite(x)):
        raise ValueError("cannot quantize NaN or infinite values")
    if axis is None:
        axis = 0 if scheme in ("per_tensor", "per_channel") else -1
    axis = _normalize_axis(axis, x.ndim)
    if block_size is not None:
        if isinstance(block_size, bool):
            raise TypeError("block_size must be an integer, not bool")
        block_size = operator.index(block_size)
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, not {block_size}")
    if scheme in ("per_tensor", "per_channel", "per_block"):
        dtype = _dtype.from_name(dtype) if isinstance(dtype, str) else (dtype or _dtype.int8)
        if dtype.name not in _INT_RANGE:
            raise ValueError(f"affine storage must be an integer type, not {dtype.name}")
        if symmetric is None:
            symmetric = dtype.is_signed
        return _affine(x, scheme, dtype, axis, block_size or 32, symmetric,
                       scale_type)
    if scheme == "nf4":
        return _nf4(x, axis, block_size or 64)
    if scheme == "mxfp":
        dtype = _dtype.from_name(dtype) if isinstance(dtype, str) else (dtype or _dtype.float8_e4m3)
        if dtype.name not in _MXFP_TYPES:
            raise ValueError(f"MXFP storage cannot be {dtype.name}")
        return _mxfp(x, axis, block_size or 32, dtype)
    raise ValueError(f"unknown scheme {scheme!r}")


# -- helpers -----------------------------------------------------------------

# numpy.AxisError moved to numpy.exceptions in numpy 1.25 (and left the top
# namespace in 2.0); a ValueError and an IndexError either way.
_AxisError = getattr(getattr(numpy, "exceptions", None), "AxisError", None) \
    or numpy.AxisError


def _normalize_axis(axis, ndim):
    """``axis`` counted as numpy counts it (negative from the end), in
    ``-ndim .. ndim - 1``, else numpy's AxisError. A 0-d array has the one
    axis 0 (or -1)."""
    if isinstance(axis, bool):
        raise TypeError("axis must be an integer, not bool")
    axis = operator.index(axis)
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise _AxisError(axis, n)
    return axis % n


def _blocks(x, axis, k, pad_value=0.0):
    """x with ``axis`` moved last, padded to whole blocks of k, as
    (outer, blocks, k): parameter b of row o is number o · blocks + b, the
    order of the scale buffer (quantization/per-block-affine.md)."""
    moved = numpy.moveaxis(x, axis, -1)
    length = moved.shape[-1]
    blocks = -(-length // k)
    padded = numpy.full(moved.shape[:-1] + (blocks * k,), pad_value,
                        dtype=moved.dtype)
    padded[..., :length] = moved
    return padded.reshape(-1, blocks, k), moved.shape


def _unblock(codes, moved_shape, axis, k):
    """Codes (outer, blocks, k) back to the stored grid: logical shape with
    ``axis`` padded to whole blocks, in row-major order."""
    padded_len = codes.shape[1] * k
    grid = codes.reshape(moved_shape[:-1] + (padded_len,))
    return numpy.moveaxis(grid, -1, axis)


def _pack(codes, bits):
    """Integer codes (two's complement for signed types) packed LSB first
    (element-types.md § Packing)."""
    flat = numpy.asarray(codes).reshape(-1).astype(numpy.int64)
    if bits >= 8:
        kind = {8: "u1", 16: "<u2", 32: "<u4"}[bits]
        return (flat & ((1 << bits) - 1)).astype(kind).tobytes()
    if bits == 6:
        groups = -(-flat.size // 4)
        v = numpy.zeros(groups * 4, dtype=numpy.uint32)
        v[:flat.size] = flat & 0x3F
        v = v.reshape(-1, 4)
        word = v[:, 0] | (v[:, 1] << 6) | (v[:, 2] << 12) | (v[:, 3] << 18)
        out = numpy.stack([word & 0xFF, (word >> 8) & 0xFF, word >> 16], axis=1)
        return out.astype(numpy.uint8).tobytes()
    per_byte = 8 // bits
    n = -(-flat.size // per_byte) * per_byte
    v = numpy.zeros(n, dtype=numpy.uint8)
    v[:flat.size] = flat & ((1 << bits) - 1)
    v = v.reshape(-1, per_byte)
    out = numpy.zeros(v.shape[0], dtype=numpy.uint8)
    for j in range(per_byte):
        out |= v[:, j] << (bits * j)
    return out.tobytes()


def _round_scale(scale, scale_type):
    """Scales as the scale type stores them, and their bytes."""
    s = numpy.asarray(scale, dtype=numpy.float32)
    if scale_type == _dtype.float32:
        return s, s.astype("<f4").tobytes()
    if scale_type == _dtype.float16:
        h = s.astype("<f2")
        return h.astype(numpy.float32), h.tobytes()
    if scale_type == _dtype.bfloat16:
        bits = s.view(numpy.uint32)
        b = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
        return (b.astype(numpy.uint32) << 16).view(numpy.float32), b.tobytes()
    raise ValueError("per-block scale type is float32, float16 or bfloat16")


def _nearest(values, table_values, table_codes):
    """For each value, the code whose table value is nearest (ties: even
    code)."""
    order = numpy.argsort(table_values, kind="stable")
    tv, tc = table_values[order], table_codes[order]
    i = numpy.clip(numpy.searchsorted(tv, values), 1, tv.size - 1)
    lo, hi = tv[i - 1], tv[i]
    d_lo, d_hi = numpy.abs(values - lo), numpy.abs(hi - values)
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (tc[i] % 2 == 0) & (tc[i - 1] % 2 == 1))
    return numpy.where(pick_hi, tc[i], tc[i - 1])


# -- affine ------------------------------------------------------------------

def _affine_params(lo, hi, qmin, qmax, symmetric):
    """Scale and zero point per group from its min and max."""
    if symmetric:
        absmax = numpy.maximum(numpy.abs(lo), numpy.abs(hi))
        scale = absmax / float(max(qmax, 1))
        zp = numpy.zeros_like(scale, dtype=numpy.int64)
    else:
        lo, hi = numpy.minimum(lo, 0.0), numpy.maximum(hi, 0.0)
        scale = (hi - lo) / float(qmax - qmin)
        safe = numpy.where(scale > 0, scale, 1.0)
        zp = numpy.clip(numpy.rint(qmin - lo / safe), qmin, qmax).astype(numpy.int64)
    scale = numpy.where(scale > 0, scale, 1.0).astype(numpy.float32)
    return scale, zp


def _codes(x, scale, zp, qmin, qmax):
    q = numpy.rint(x.astype(numpy.float64) / scale) + zp
    return numpy.clip(q, qmin, qmax).astype(numpy.int64)


def _affine(x, scheme, dtype, axis, k, symmetric, scale_type):
    qmin, qmax = _INT_RANGE[dtype.name]
    bits = dtype.bit_width
    if scheme == "per_tensor":
        lo = float(x.min()) if x.size else 0.0
        hi = float(x.max()) if x.size else 0.0
        scale, zp = _affine_params(numpy.float32(lo), numpy.float32(hi), qmin,
                                   qmax, symmetric)
        q = PerTensorAffine(float(scale), int(zp))
        codes = _codes(x, numpy.float32(q.scale), zp, qmin, qmax)
        return Tensor(_pack(codes, bits), dtype, x.shape, quantization=q)
    if scheme == "per_channel":
        moved = numpy.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
        lo = moved.min(axis=1) if moved.size else numpy.zeros(x.shape[axis])
        hi = moved.max(axis=1) if moved.size else numpy.zeros(x.shape[axis])
        scale, zp = _affine_params(lo, hi, qmin, qmax, symmetric)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        codes = _codes(x, scale.reshape(shape), zp.reshape(shape), qmin, qmax)
        aux = [scale.astype("<f4").tobytes()]
        if symmetric:
            q = PerChannelAffine.symmetric(axis, 1)
        else:
            aux.append(zp.astype("<i4").tobytes())
            q = PerChannelAffine.asymmetric(axis, 1, 2)
        return Tensor(_pack(codes, bits), dtype, x.shape, aux_buffers=aux,
                      quantization=q)
    blocks, moved_shape = _blocks(x, axis, k)
    length = moved_shape[-1]
    valid = (numpy.arange(blocks.shape[1] * k) < length).reshape(1, -1, k)
    lo = numpy.where(valid, blocks, numpy.inf).min(axis=2)
    hi = numpy.where(valid, blocks, -numpy.inf).max(axis=2)
    scale, zp = _affine_params(lo, hi, qmin, qmax, symmetric)
    scale, scale_bytes = _round_scale(scale, scale_type)
    codes = _codes(blocks, scale[..., None], zp[..., None], qmin, qmax)
    codes = numpy.where(valid, codes, 0)  # padding elements: code 0
    aux = [scale_bytes]
    if symmetric:
        q = PerBlockAffine.symmetric(axis, k, 1, scale_type)
    else:
        aux.append(zp.astype("<i4").tobytes())
        q = PerBlockAffine.asymmetric(axis, k, 1, 2, scale_type)
    grid = _unblock(codes, moved_shape, axis, k)
    return Tensor(_pack(grid, bits), dtype, x.shape, aux_buffers=aux,
                  quantization=q)


# -- NF4 and MXFP --------------------------------------------------------------

def _nf4(x, axis, k):
    blocks, moved_shape = _blocks(x, axis, k)
    length = moved_shape[-1]
    valid = (numpy.arange(blocks.shape[1] * k) < length).reshape(1, -1, k)
    absmax = numpy.abs(numpy.where(valid, blocks, 0)).max(axis=2).astype(numpy.float32)
    safe = numpy.where(absmax > 0, absmax, 1.0).astype(numpy.float32)
    lut = numpy.asarray(NF4.LUT, dtype=numpy.float32)
    codes = _nearest(blocks / safe[..., None], lut, numpy.arange(16))
    codes = numpy.where(valid, codes, 0)
    grid = _unblock(codes, moved_shape, axis, k)
    return Tensor(_pack(grid, 4), _dtype.uint4, x.shape,
                  aux_buffers=[safe.astype("<f4").tobytes()],
                  quantization=NF4(axis=axis, block_size=k, scale_buffer_index=1))


def _element_table(dtype):
    """(values, codes) of the finite values of an MXFP element type."""
    if dtype.name in ("int8", "int4"):
        lo, hi = _INT_RANGE[dtype.name]
        values = numpy.arange(lo, hi + 1, dtype=numpy.float32)
        return values, numpy.arange(lo, hi + 1)
    n = 1 << dtype.bit_width
    table = _hurray.minifloat_table(dtype.tag)[:n]
    codes = numpy.arange(n)
    keep = numpy.isfinite(table)
    return table[keep].astype(numpy.float32), codes[keep]


def _mxfp(x, axis, k, dtype):
    if x.ndim == 0 or x.shape[axis] % k != 0:
        raise ValueError("MXFP needs shape[axis] to be a multiple of block_size "
                         "(quantization/mxfp.md: no partial blocks)")
    blocks, moved_shape = _blocks(x, axis, k)
    values, codes_of = _element_table(dtype)
    top = float(min(values.max(), -values.min()))  # covered on both sides
    absmax = numpy.abs(blocks).max(axis=2)
    with numpy.errstate(divide="ignore"):
        e = numpy.where(absmax > 0,
                        numpy.ceil(numpy.log2(absmax / top)), 0.0) + 127
    e = numpy.clip(e, 1, 254).astype(numpy.int64)  # 0x00 and 0xFF: QNT-MX-07
    scale = numpy.ldexp(numpy.float64(1.0), e - 127)
    codes = _nearest(blocks / scale[..., None], values, codes_of)
    grid = _unblock(codes, moved_shape, axis, k)
    bits = 8 if dtype.name == "int8" else dtype.bit_width
    return Tensor(_pack(grid, bits), dtype, x.shape,
                  aux_buffers=[e.astype(numpy.uint8).tobytes()],
                  quantization=MXFP(axis=axis, block_size=k, scale_buffer_index=1))
