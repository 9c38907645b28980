"""The five scheme classes: fields, encoding, equality, refusals."""

import struct

import pytest

import hurray


def test_per_tensor_wire_layout():
    wire = hurray.PerTensorAffine(0.5, -3).encode()
    assert len(wire) == 16
    tag, version, flags = struct.unpack_from("<BBH", wire)
    scale, zp = struct.unpack_from("<fi", wire, 4)
    assert (tag, version, flags, scale, zp) == (1, 1, 0, 0.5, -3)
    assert wire[12:] == bytes(4)


@pytest.mark.parametrize("scheme,size", [
    (hurray.PerTensorAffine(1.0, 0), 16),
    (hurray.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1), 20),
    (hurray.PerChannelAffine.asymmetric(axis=1, scale_buffer_index=2,
                                        zero_point_buffer_index=3), 20),
    (hurray.PerBlockAffine.symmetric(0, 64, 1, hurray.float32), 24),
    (hurray.PerBlockAffine.asymmetric(1, 32, 2, 3, hurray.float16), 24),
    (hurray.NF4(axis=0, block_size=64, scale_buffer_index=1), 16),
    (hurray.MXFP(axis=0, block_size=32, scale_buffer_index=1), 16),
])
def test_round_trip_returns_the_same_class(scheme, size):
    wire = scheme.encode()
    assert len(wire) == size
    back = hurray.decode_quantization(wire + b"trailing bytes are ignored")
    assert type(back) is type(scheme)
    assert back == scheme
    assert hash(back) == hash(scheme)


def test_symmetric_is_a_factory_on_the_class_and_a_flag_on_instances():
    sym = hurray.PerChannelAffine.symmetric(axis=0, scale_buffer_index=1)
    asym = hurray.PerChannelAffine.asymmetric(axis=0, scale_buffer_index=1,
                                              zero_point_buffer_index=2)
    assert sym.symmetric is True and asym.symmetric is False
    assert sym.zero_point_buffer_index is None
    assert asym.zero_point_buffer_index == 2
    assert sym != asym


def test_attributes():
    q = hurray.PerBlockAffine.asymmetric(1, 32, 2, 3, hurray.bfloat16)
    assert (q.axis, q.block_size, q.scale_buffer_index,
            q.zero_point_buffer_index, q.scale_type) == (1, 32, 2, 3,
                                                         hurray.bfloat16)
    assert "PerBlockAffine" in repr(q)


@pytest.mark.parametrize("build,rule", [
    (lambda: hurray.PerTensorAffine(0.0, 0), "QNT-PTA-01"),
    (lambda: hurray.PerTensorAffine(float("nan"), 0), "QNT-PTA-01"),
    (lambda: hurray.PerBlockAffine.symmetric(0, 48, 1), "QNT-PBA-02"),
    (lambda: hurray.PerBlockAffine.symmetric(0, 64, 1, hurray.int8), "QNT-PBA-05"),
    (lambda: hurray.NF4(axis=0, block_size=4, scale_buffer_index=1), "QNT-NF4-02"),
    (lambda: hurray.MXFP(axis=0, block_size=8, scale_buffer_index=1), "QNT-MX-02"),
])
def test_invalid_fields_are_refused_with_the_rule(build, rule):
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        build()
    assert e.value.rule == rule
    assert isinstance(e.value, ValueError)


def test_unknown_tag_is_refused():
    wire = bytearray(hurray.NF4(0, 64, 1).encode())
    wire[0] = 0x09
    with pytest.raises((hurray.InvalidDescriptorError, NotImplementedError)):
        hurray.decode_quantization(bytes(wire))


def test_truncated_section_is_refused():
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.decode_quantization(hurray.NF4(0, 64, 1).encode()[:10])
