"""The reference package's API as its users spell it (issue 45): the
layout classes, numpy's copy= contract, the streaming lifecycle, the error
classes, and building sparse tensors. Our own tests, written from the
behaviours the issue lists."""

import os
import socket
import struct

import numpy
import pytest

import hurray


def _f32(n=4):
    return hurray.Tensor(struct.pack(f"{n}f", *range(n)), hurray.float32, [n])


def _coo():
    return hurray.sparse_coo(numpy.array([5.0, 7.0], "f4"),
                             numpy.array([[0, 0], [1, 1]], "u8"), [2, 2])


# -- layouts ---------------------------------------------------------------------

def test_every_layout_class_is_a_layout_value():
    layouts = [
        hurray.RowMajorLayout(), hurray.ColMajorLayout(),
        hurray.StridedLayout([2, 1]), hurray.TiledLayout([4, 4]),
        hurray.MortonLayout([2, 2]), hurray.HilbertLayout(2, 2),
        hurray.CooLayout(3), hurray.CsrLayout(3), hurray.CscLayout(3),
        hurray.CsfLayout(3, [1, 0]), hurray.BlockPagedLayout(16, 8, 0, 1),
        hurray.CompositeLayout("partition", 2),
        hurray.PrivateExtensionLayout(0xF3, 9, b"x"),
        hurray.UnknownLayout(0x0D, b"\1"),
    ]
    assert len(set(layouts)) == len(layouts)
    for layout in layouts:
        assert isinstance(layout, hurray.Layout)
        assert layout != layout.name and layout == layout
        assert repr(layout).startswith(type(layout).__name__ + "(")
    with pytest.raises(TypeError):
        hurray.Layout()
    assert hurray.ColMajorLayout is hurray.ColumnMajorLayout


def test_layout_parameters_and_counts():
    assert hurray.HilbertLayout(5, 3).hilbert_rank == 3
    assert repr(hurray.HilbertLayout(5, 3)) == \
        "HilbertLayout(hilbert_order=5, hilbert_rank=3)"
    assert hurray.CsfLayout(4, [0, 1, 2]).buffer_count == 7
    assert hurray.CompositeLayout("group", 2).buffer_count == 0
    assert hurray.CompositeLayout("group", 2).is_virtual
    assert hurray.UnknownLayout(0x0D).buffer_count is None
    assert not hurray.BlockPagedLayout(16, 8, 0, 1).is_dense
    nested = hurray.TiledLayout([8, 8], inner_layout="tiled",
                                inner_tiled=hurray.TiledLayout([2, 2]))
    assert nested.inner_tiled.tile_shape == (2, 2)
    assert hurray.CompositeLayout("overlay", 2, combine_op="replace").combine_op == "replace"
    for bad in (lambda: hurray.CompositeLayout("group", 2, combine_op="add"),
                lambda: hurray.CompositeLayout("overlay", 2),
                lambda: hurray.UnknownLayout(0x06),
                lambda: hurray.UnknownLayout(0xF1),
                lambda: hurray.PrivateExtensionLayout(0x0D, 1),
                lambda: hurray.TiledLayout([2], inner_layout="tiled")):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="CooLayout"):
        hurray.UnknownLayout(0x06)


def test_tensor_layout_reports_the_descriptor():
    t = hurray.Tensor(bytes(64), hurray.float32, [4, 4],
                      layout=hurray.HilbertLayout(2))
    assert t.layout == hurray.HilbertLayout(2, 2)
    assert t.layout is not t.layout
    with pytest.raises(AttributeError):
        t.layout = hurray.RowMajorLayout()
    for bad in ("csr", object()):
        with pytest.raises(TypeError, match="hurray.Layout"):
            hurray.Tensor(bytes(16), hurray.float32, [4], layout=bad)
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(16), hurray.float32, [4],
                      layout=hurray.UnknownLayout(0x0C, b"\1\2"))
    assert e.value.rule == "LAY-TAG-02"
    with pytest.raises(hurray.UnsupportedError, match="owns no buffers"):
        hurray.Tensor(bytes(16), hurray.float32, [4],
                      layout=hurray.CompositeLayout("group", 2))
    for layout in (hurray.StridedLayout([1]), hurray.MortonLayout([2, 2, 2]),
                   hurray.HilbertLayout(2, 3)):
        with pytest.raises(hurray.InvalidDescriptorError):
            hurray.Tensor(bytes(64), hurray.float32, [4, 4], layout=layout)


def test_refusals_name_the_component():
    with pytest.raises(hurray.BufferError, match="row_ptr"):
        hurray.Tensor(struct.pack("2f", 1, 2), hurray.float32, [2, 2],
                      aux_buffers=[struct.pack("2Q", 0, 1),
                                   struct.pack("2Q", 0, 1)],
                      layout=hurray.CsrLayout(nnz=2))
    with pytest.raises(hurray.InvalidDescriptorError,
                       match="quantization buffer index 1"):
        hurray.Tensor(struct.pack("2b", 1, 2), hurray.int8, [2, 2],
                      aux_buffers=[struct.pack("2Q", 0, 1),
                                   struct.pack("3Q", 0, 1, 2)],
                      layout=hurray.CsrLayout(nnz=2),
                      quantization=hurray.PerChannelAffine.symmetric(
                          axis=0, scale_buffer_index=1))


# -- numpy's copy= contract ----------------------------------------------------------

def test_array_views_share_memory_and_copy_is_honoured():
    t = _f32()
    a = numpy.asarray(t)
    a[0] = 42.0  # built from bytes: the tensor owns a writable copy
    assert numpy.asarray(t)[0] == 42.0
    assert t.__array__(copy=True) is not a
    b = t.__array__(copy=True)
    b[1] = -1.0
    assert numpy.asarray(t)[1] == 1.0
    assert t.__array__(dtype=numpy.float32, copy=False).base is not None
    with pytest.raises(hurray.CopyRequiredError) as e:
        t.__array__(dtype=numpy.float64, copy=False)
    assert isinstance(e.value, ValueError)
    assert t.__array__(dtype=numpy.float64).dtype == numpy.float64
    ro = hurray.Tensor(numpy.zeros(4, "f4").view("u1").copy(), hurray.float32, [4])
    assert numpy.asarray(ro).flags.writeable


def test_dense_only_protocols_refuse_by_layout_and_type():
    with pytest.raises(hurray.UnsupportedError, match="coo"):
        numpy.asarray(_coo())
    with pytest.raises(BufferError, match="coo"):
        _coo().__dlpack__()
    b = hurray.Tensor(bytes(1), hurray.bool, [4])
    with pytest.raises(BufferError, match="bool.*DLPack|DLPack.*bool"):
        numpy.asarray(b)
    with pytest.raises(BufferError):
        b.__dlpack__()
    assert numpy.dtype("uint8") == hurray.uint8


# -- streaming ------------------------------------------------------------------------

def test_stream_writer_to_a_path_appears_whole_on_finish(tmp_path):
    path = tmp_path / "s.stream"
    with hurray.StreamWriter(path) as w:
        w.write(_f32())
        assert not path.exists()  # a hidden temp until finished
    assert path.exists() and os.listdir(tmp_path) == ["s.stream"]
    with pytest.raises(hurray.StreamError, match="destination"):
        w.getvalue()
    with pytest.raises(hurray.StreamError):
        w.write(_f32())
    w.finish()  # idempotent
    with hurray.StreamReader(path) as r:
        assert [t.shape for t in r] == [(4,)]
    with pytest.raises(RuntimeError):
        with hurray.StreamWriter(tmp_path / "t.stream") as w:
            w.write(_f32())
            raise RuntimeError("boom")
    assert sorted(os.listdir(tmp_path)) == ["s.stream"]


def test_stream_reader_close_and_sources():
    w = hurray.StreamWriter()
    w.write(_f32())
    w.write(_f32())
    w.finish()
    r = hurray.StreamReader(w.getvalue())
    assert next(r).shape == (4,)
    r.close()
    assert list(r) == []
    import io
    with pytest.raises(TypeError, match="getvalue"):
        hurray.StreamReader(io.BytesIO(w.getvalue()))
    with pytest.raises(TypeError):
        hurray.StreamWriter(object())
    with pytest.raises(TypeError):
        hurray.StreamWriter().write(numpy.zeros(2))
    a, b = socket.socketpair()
    try:
        with hurray.StreamWriter(a) as sw:
            sw.write(_f32())
        a.sendall(b"")  # finishing left the caller's socket open
        a.shutdown(socket.SHUT_WR)
        assert len(list(hurray.StreamReader(b))) == 1
    finally:
        a.close()
        b.close()


# -- errors --------------------------------------------------------------------------

def test_device_and_shard_errors():
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.Device("tpu")
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.Shard([8, 8], [0])
    assert hurray.Shard([8, 8], [0, 4]).shard_offset == (0, 4)


# -- sparse construction -----------------------------------------------------------------

def test_sparse_constructors_and_accessors():
    coo = _coo()
    assert isinstance(coo, hurray.Tensor) and coo.nnz == 2
    assert coo.indices.shape == (2, 2) and coo.values.tolist() == [5.0, 7.0]
    assert "layout='coo'" in repr(coo) and repr(coo).startswith("hurray.Tensor(")
    assert hasattr(coo, "indices") and not hasattr(coo, "row_ptr")
    dense = _f32()
    for attr in ("nnz", "values", "indices", "row_ptr", "col_indices", "col_ptr"):
        assert not hasattr(dense, attr), attr

    csr = hurray.sparse_csr(numpy.array([1, 2], "f4"), numpy.array([0, 1]),
                            numpy.array([0, 1, 2]), [2, 2])
    assert csr.layout == hurray.CsrLayout(2)
    assert csr.row_ptr.tolist() == [0, 1, 2] and csr.col_indices.dtype == "<u8"
    assert not hasattr(csr, "indices")
    csc = hurray.sparse_csc(numpy.array([1, 2], "f8"), numpy.array([1, 0]),
                            numpy.array([0, 1, 2]), [2, 2])
    assert csc.layout.name == "csc" and csc.col_ptr.tolist() == [0, 1, 2]
    csf = hurray.sparse_csf(numpy.array([1, 2, 3, 4], "f4"),
                            [([0, 2], [0, 1]), ([0, 2, 3], [0, 2, 1]),
                             ([0, 1, 2, 4], [1, 3, 0, 2])], [2, 3, 4])
    assert csf.layout == hurray.CsfLayout(4, [0, 1, 2]) and csf.buffer_count == 7
    # The views are the tensor's memory.
    vals = numpy.array([5.0, 7.0], "f4")
    coo2 = hurray.sparse_coo(vals, numpy.array([[0, 0], [1, 1]], "u8"), [2, 2])
    assert numpy.shares_memory(coo2.values, vals)
    with pytest.raises(ValueError):
        hurray.sparse_coo(vals, numpy.array([[0, 0]], "u8"), [2, 2])
    with pytest.raises(ValueError):
        hurray.sparse_csr(vals, numpy.array([0, -1]), numpy.array([0, 1, 2]), [2, 2])


def test_a_file_mixes_dense_and_sparse(tmp_path):
    hurray.save(tmp_path / "m.hrry", {"d": _f32(), "s": _coo()})
    back = hurray.load(tmp_path / "m.hrry")
    assert back["d"].layout.name == "row_major"
    assert back["s"].layout == hurray.CooLayout(2) and back["s"].nnz == 2
    assert back["s"].indices.tolist() == [[0, 0], [1, 1]]


class _ScipyLike:
    """What from_scipy reads of a scipy.sparse matrix (Debian's scipy cannot
    be installed here beside our boost)."""

    def __init__(self, fmt, data, indices, indptr, shape):
        self.format, self.data, self.indices = fmt, data, indices
        self.indptr, self.shape = indptr, shape


def test_from_scipy_takes_csr_and_csc_and_refuses_coo():
    data = numpy.array([1.0, 2.0], "f4")
    m = _ScipyLike("csr", data, numpy.array([0, 1], "i4"),
                   numpy.array([0, 1, 2], "i4"), (2, 2))
    t = hurray.from_scipy(m)
    assert t.layout == hurray.CsrLayout(2) and t.shape == (2, 2)
    assert numpy.shares_memory(t.values, data)
    assert t.col_indices.dtype == numpy.dtype("<u8")
    c = hurray.from_scipy(_ScipyLike("csc", data, numpy.array([1, 0], "u8"),
                                     numpy.array([0, 1, 2], "u8"), (2, 2)))
    assert c.layout.name == "csc" and c.row_indices.tolist() == [1, 0]
    with pytest.raises(hurray.UnsupportedError, match="sparse_coo"):
        hurray.from_scipy(_ScipyLike("coo", data, None, None, (2, 2)))
    with pytest.raises(TypeError):
        hurray.from_scipy(numpy.eye(2))


def test_read_layouts_report_their_parameters(corpus):
    def layout_of(name):
        with open(os.path.join(corpus, "descriptors", name), "rb") as f:
            d, _ = hurray.decode_descriptor(f.read())
        return d, d.layout

    d, tiled = layout_of("layout_tiled_2level_f32_8x8.bin")
    assert isinstance(tiled, hurray.TiledLayout)
    assert tiled.inner_layout == "tiled"
    assert isinstance(tiled.inner_tiled, hurray.TiledLayout)
    assert len(tiled.tile_shape) == d.ndim
    d, strided = layout_of("tiled_strided_f16.bin")
    assert isinstance(strided, hurray.TiledLayout)
    assert "strided" in (strided.outer_layout, strided.inner_layout,
                         getattr(strided.inner_tiled, "outer_layout", None))
    d, paged = layout_of("layout_block_paged_f16_16x2x8.bin")
    assert isinstance(paged, hurray.BlockPagedLayout) and paged.buffer_count == 3
    assert paged.kv_role in ("key", "value", "fused") and paged.page_size > 0
    d, overlay = layout_of("layout_composite_overlay_4x4.bin")
    assert overlay.composition_rule == "overlay"
    assert overlay.combine_op in ("replace", "add") and overlay.member_count > 0
    d, part = layout_of("composite_partition.bin")
    assert part == hurray.CompositeLayout("partition", part.member_count)
