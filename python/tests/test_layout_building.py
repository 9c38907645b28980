"""Tensors built from Python in the newer layouts (issue 45): tiled,
block-paged, composite (head and members), private extension; each written
and read back by our own readers, and the reject rules still hold (the
writer never writes what our reader refuses)."""

import struct

import numpy
import pytest

import hurray

_X = numpy.arange(64, dtype="f4")


def _tiled():
    return hurray.Tensor(_X.tobytes(), hurray.float32, [8, 8],
                         layout=hurray.TiledLayout([4, 4]))


def _nested():
    return hurray.Tensor(
        _X.tobytes(), hurray.float32, [8, 8],
        layout=hurray.TiledLayout([4, 4], inner_layout="tiled",
                                  inner_tiled=hurray.TiledLayout([2, 2])))


def _strided_tiles():
    return hurray.Tensor(
        _X.tobytes(), hurray.float32, [8, 8],
        layout=hurray.TiledLayout([4, 4], outer_layout="strided",
                                  outer_strides=[2, 1],
                                  inner_layout="strided",
                                  inner_strides=[4, 1]))


def _paged():
    # 2 pages of 16 tokens, 2 heads of 4: one sequence of 32 tokens.
    pages = numpy.arange(2 * 16 * 2 * 4, dtype="f4").tobytes()
    return hurray.Tensor(
        pages, hurray.float32, [32, 2, 4],
        layout=hurray.BlockPagedLayout(16, 2, 0, 1, kv_role="key",
                                       layer_index=3),
        aux_buffers=[struct.pack("2I", 0, 1), struct.pack("2I", 0, 2)])


_BUILDERS = {"tiled": _tiled, "nested": _nested,
             "strided_tiles": _strided_tiles, "block_paged": _paged}


@pytest.mark.parametrize("kind", sorted(_BUILDERS))
def test_a_built_layout_survives_a_file_and_a_stream(tmp_path, kind):
    t = _BUILDERS[kind]()
    hurray.save(tmp_path / "m.hrry", {"t": t})
    back = hurray.load(tmp_path / "m.hrry")["t"]
    assert back.layout == t.layout
    assert back.shape == t.shape
    assert [bytes(back.buffer(i)) for i in range(t.buffer_count)] == \
        [bytes(t.buffer(i)) for i in range(t.buffer_count)]
    w = hurray.StreamWriter()
    w.write(t)
    w.finish()
    (again,) = list(hurray.StreamReader(w.getvalue()))
    assert again.layout == t.layout
    # The strict ingest reader (data rules included) takes it too.
    for source in (w.getvalue(), tmp_path / "m.hrry"):
        ((_, values),) = list(hurray.ingest(source))
        assert values.size == t.size


def test_block_paged_parameters_come_back():
    layout = _paged().layout
    assert (layout.kv_role, layout.layer_index, layout.page_size,
            layout.num_pages) == ("key", 3, 16, 2)


def test_the_layout_rules_hold_when_building():
    # LAY-TIL: a tile shape with a zero.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(_X.tobytes(), hurray.float32, [8, 8],
                      layout=hurray.TiledLayout([0, 4]))
    assert e.value.rule.startswith("LAY-TIL")
    with pytest.raises(hurray.InvalidDescriptorError, match="rank"):
        hurray.Tensor(_X.tobytes(), hurray.float32, [8, 8],
                      layout=hurray.TiledLayout([4]))
    with pytest.raises(ValueError, match="inner_strides"):
        hurray.TiledLayout([4, 4], inner_layout="strided")
    # LAY-BPG-18: a block table pointing past the pages (a data rule, which
    # the strict ingest reader checks: never built).
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(
            bytes(2 * 16 * 2 * 4 * 4), hurray.float32, [32, 2, 4],
            layout=hurray.BlockPagedLayout(16, 2, 0, 1),
            aux_buffers=[struct.pack("2I", 0, 9), struct.pack("2I", 0, 2)])
    assert e.value.rule == "LAY-BPG-18"
    # LAY-CSR-08: a column index out of bounds, likewise.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(struct.pack("2f", 1, 2), hurray.float32, [2, 2],
                      layout=hurray.CsrLayout(2),
                      aux_buffers=[struct.pack("2Q", 0, 9),
                                   struct.pack("3Q", 0, 1, 2)])
    assert e.value.rule == "LAY-CSR-08"
    # LAY-TAG-02: an unassigned tag is never written.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.Tensor(bytes(16), hurray.float32, [4],
                      layout=hurray.UnknownLayout(0x0C))
    assert e.value.rule == "LAY-TAG-02"


def _group():
    head = hurray.Tensor(None, hurray.float32, [4],
                         layout=hurray.CompositeLayout("group", 2))
    members = [hurray.Tensor(numpy.full(4, i, "f4").tobytes(), hurray.float32,
                             [4]) for i in (1, 2)]
    return head, members


def _overlay():
    head = hurray.Tensor(None, hurray.float32, [4],
                         layout=hurray.CompositeLayout("overlay", 2, "add"))
    whole = hurray.Shard([4], [0])
    base = hurray.Tensor(numpy.full(4, 1, "f4").tobytes(), hurray.float32, [4],
                         member_role="base", shard=whole)
    fix = hurray.Tensor(numpy.full(4, 2, "f4").tobytes(), hurray.float32, [4],
                        member_role="correction", shard=whole)
    return head, [base, fix]


@pytest.mark.parametrize("make", [_group, _overlay])
def test_a_composite_head_and_its_members(tmp_path, make):
    head, members = make()
    assert head.buffer_count == 0 and head.layout.is_virtual
    w = hurray.StreamWriter()
    for t in (head, *members):
        w.write(t)
    w.finish()
    back = list(hurray.StreamReader(w.getvalue()))
    assert back[0].layout == head.layout
    assert [t.member_role for t in back[1:]] == \
        [t.member_role for t in members]
    assert numpy.array_equal(numpy.asarray(back[2]), numpy.asarray(members[1]))
    hurray.save(tmp_path / "c.hrry", {"c": head, "c.0": members[0],
                                      "c.1": members[1]})
    loaded = hurray.load(tmp_path / "c.hrry")
    assert loaded["c"].layout == head.layout
    assert loaded["c.1"].member_role == members[1].member_role


def test_an_overlay_member_without_its_role_is_not_written():
    head, (base, _) = _overlay()
    plain = hurray.Tensor(numpy.full(4, 2, "f4").tobytes(), hurray.float32,
                          [4], shard=hurray.Shard([4], [0]))
    w = hurray.StreamWriter()
    w.write(head)
    w.write(base)
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        w.write(plain)
    assert e.value.rule.startswith("CMP-")


def test_a_composite_missing_members_is_not_written():
    head, members = _group()
    w = hurray.StreamWriter()
    w.write(head)
    w.write(members[0])
    with pytest.raises(hurray.HurrayError):
        w.finish()  # the head announced two members


def test_a_composite_head_owns_no_buffers():
    with pytest.raises(hurray.UnsupportedError, match="owns no buffers"):
        hurray.Tensor(bytes(16), hurray.float32, [4],
                      layout=hurray.CompositeLayout("group", 2))
    with pytest.raises(TypeError, match="composite head"):
        hurray.Tensor(None, hurray.float32, [4])
    with pytest.raises(ValueError, match="member_role"):
        hurray.Tensor(bytes(16), hurray.float32, [4], member_role="main")


def test_a_private_extension_layout_needs_an_agreement_to_be_written():
    layout = hurray.PrivateExtensionLayout(0xF0, 7)
    t = hurray.Tensor(bytes(16), hurray.float32, [4], layout=layout)
    # Strict readers refuse an id they have not agreed on (LAY-TAG-04), so
    # a strict writer does too; a permissive one writes it, and a
    # permissive reader reads it back.
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.StreamWriter().write(t)
    assert e.value.rule == "LAY-TAG-04"
    w = hurray.StreamWriter(permissive=True)
    w.write(t)
    w.finish()
    with pytest.raises(hurray.InvalidDescriptorError):
        list(hurray.StreamReader(w.getvalue()))
    (back,) = list(hurray.StreamReader(w.getvalue(), permissive=True))
    assert back.layout == layout
    assert bytes(back.buffer(0)) == bytes(16)
    # Its opaque data would be written as zeros: refused.
    with pytest.raises(hurray.UnsupportedError):
        hurray.Tensor(bytes(16), hurray.float32, [4],
                      layout=hurray.PrivateExtensionLayout(0xF0, 7, b"\x01"))
