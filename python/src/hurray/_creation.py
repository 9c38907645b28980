"""Creating tensors from values: numpy builds them, from_numpy wraps the
memory without copying."""

import numpy

from ._dtype import dtype as _dtype
from ._errors import UnsupportedError
from ._tensor import Tensor, from_numpy

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "asarray",
           "from_dlpack"]


def _np(dtype):
    """The numpy dtype of a hurray dtype (None: numpy's default)."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        dtype = _dtype.from_name(dtype)
    if isinstance(dtype, _dtype):
        if dtype.numpy is None:
            raise UnsupportedError(
                f"{dtype.name} has no numpy type: build it with hurray.Tensor "
                "from packed bytes, or with hurray.quantize")
        return dtype.numpy
    return numpy.dtype(dtype)


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def zeros(shape, dtype=None):
    return from_numpy(numpy.zeros(_shape(shape), dtype=_np(dtype) or "f8"))


def ones(shape, dtype=None):
    return from_numpy(numpy.ones(_shape(shape), dtype=_np(dtype) or "f8"))


def full(shape, fill_value, dtype=None):
    return from_numpy(numpy.full(_shape(shape), fill_value, dtype=_np(dtype)))


def empty(shape, dtype=None):
    """Uninitialised values, as numpy.empty."""
    return from_numpy(numpy.empty(_shape(shape), dtype=_np(dtype) or "f8"))


def _like(fn, t, *args, dtype=None):
    return fn(t.shape, *args, dtype=dtype if dtype is not None else t.dtype)


def zeros_like(t, dtype=None):
    return _like(zeros, t, dtype=dtype)


def ones_like(t, dtype=None):
    return _like(ones, t, dtype=dtype)


def full_like(t, fill_value, dtype=None):
    return _like(full, t, fill_value, dtype=dtype)


def empty_like(t, dtype=None):
    return _like(empty, t, dtype=dtype)


def arange(start, stop=None, step=1, dtype=None):
    return from_numpy(numpy.arange(start, stop, step, dtype=_np(dtype)))


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    return from_numpy(numpy.linspace(start, stop, num, endpoint=endpoint,
                                     dtype=_np(dtype)))


def eye(n, m=None, k=0, dtype=None):
    return from_numpy(numpy.eye(n, m, k, dtype=_np(dtype) or "f8"))


def asarray(obj, dtype=None):
    """A tensor of a list, a numpy array or anything numpy converts; a
    hurray.Tensor is returned as it is (when no other dtype is asked)."""
    if isinstance(obj, Tensor) and (dtype is None or _np(dtype) == obj.dtype.numpy):
        return obj
    return from_numpy(numpy.asarray(obj, dtype=_np(dtype)))


def from_dlpack(obj):
    """A tensor over any DLPack producer's memory (numpy.from_dlpack reads
    it; CPU only)."""
    return from_numpy(numpy.from_dlpack(obj))
