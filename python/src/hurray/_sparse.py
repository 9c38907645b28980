"""Building sparse tensors (layouts/coo.md, csr.md, csc.md, csf.md) from
numpy arrays, and from scipy.sparse matrices. The arrays become the
tensor's buffers without a copy when they already are contiguous
little-endian values and uint64 indices; otherwise over a converted copy."""

import operator

import numpy

from ._errors import UnsupportedError
from ._sections import CooLayout, CscLayout, CsfLayout, CsrLayout
from ._tensor import _FROM_NUMPY, Tensor
from ._dtype import dtype as _dtype

__all__ = ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_csf",
           "from_scipy"]

_INDEX = numpy.dtype("<u8")  # every sparse layout stores uint64 indices


def _values(values):
    v = numpy.asarray(values)
    if v.dtype.byteorder == ">":
        v = v.astype(v.dtype.newbyteorder("<"))
    name = _FROM_NUMPY.get(f"{v.dtype.kind}{v.dtype.itemsize}")
    if name is None:
        raise TypeError(f"no Hurray element type for numpy {v.dtype}")
    v = numpy.ascontiguousarray(v).reshape(-1)
    return v, _dtype.from_name(name)


def _indices(a, what):
    a = numpy.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, not {a.dtype}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise ValueError(f"{what} holds a negative index")
    return numpy.ascontiguousarray(a, dtype=_INDEX)


def _shape(shape):
    return tuple(operator.index(d) for d in shape)


def sparse_coo(values, indices, shape, is_sorted=False):
    """A COO tensor: ``values`` (nnz) and ``indices`` (nnz × rank, one row
    of coordinates per value)."""
    v, t = _values(values)
    shape = _shape(shape)
    idx = _indices(indices, "indices")
    if idx.ndim != 2 or idx.shape != (v.size, len(shape)):
        raise ValueError(f"indices must be (nnz, rank) = ({v.size}, "
                         f"{len(shape)}), not {idx.shape}")
    return Tensor(v, t, shape, aux_buffers=[idx],
                  layout=CooLayout(v.size, is_sorted))


def sparse_csr(values, col_indices, row_ptr, shape):
    """A CSR matrix: values and their column indices (nnz each), and the
    row pointers (rows + 1)."""
    v, t = _values(values)
    return Tensor(v, t, _shape(shape),
                  aux_buffers=[_indices(col_indices, "col_indices"),
                               _indices(row_ptr, "row_ptr")],
                  layout=CsrLayout(v.size))


def sparse_csc(values, row_indices, col_ptr, shape):
    """A CSC matrix: values and their row indices (nnz each), and the
    column pointers (columns + 1)."""
    v, t = _values(values)
    return Tensor(v, t, _shape(shape),
                  aux_buffers=[_indices(row_indices, "row_indices"),
                               _indices(col_ptr, "col_ptr")],
                  layout=CscLayout(v.size))


def sparse_csf(values, levels, shape, mode_order=None):
    """A CSF tensor: values, and one ``(pos, crd)`` pair of index arrays
    per level, in ``mode_order`` (default 0, 1, ...)."""
    v, t = _values(values)
    shape = _shape(shape)
    order = tuple(range(len(shape))) if mode_order is None else mode_order
    aux = []
    for i, (pos, crd) in enumerate(levels):
        aux += [_indices(pos, f"pos[{i}]"), _indices(crd, f"crd[{i}]")]
    return Tensor(v, t, shape, aux_buffers=aux, layout=CsfLayout(v.size, order))


def from_scipy(matrix):
    """A CSR or CSC tensor over a scipy.sparse matrix or array's ``data``,
    ``indices`` and ``indptr`` (no copy when the indices already are
    uint64). COO is refused: scipy keeps rows and columns apart, the layout
    wants one (nnz, rank) array: use sparse_coo, or ``m.tocsr()``."""
    fmt = getattr(matrix, "format", None)
    if fmt == "coo":
        raise UnsupportedError(
            "from_scipy takes CSR and CSC: scipy's COO keeps row and col "
            "apart; use hurray.sparse_coo(m.data, numpy.stack([m.row, "
            "m.col], axis=1), m.shape) or m.tocsr()")
    if fmt not in ("csr", "csc") or not all(
            hasattr(matrix, a) for a in ("data", "indices", "indptr", "shape")):
        raise TypeError("from_scipy takes a scipy.sparse CSR or CSC matrix, "
                        f"not {type(matrix).__name__}")
    build = sparse_csr if fmt == "csr" else sparse_csc
    return build(matrix.data, matrix.indices, matrix.indptr, matrix.shape)
