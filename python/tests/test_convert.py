"""hurray.convert: safetensors (written here with numpy, byte layout by
hand), a sharded model and GGUF (F32, Q8_0, Q4_1) converted through the
library's ConvertFile (the call `hurray convert` and the C ABI make) and
read back with hurray; options passed through; the errors with their
classes, rule ids and nothing written."""

import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy
import pytest

import hurray


def _write_safetensors(path, arrays, metadata=None):
    """8-byte header length, the JSON header (padded with spaces to 8),
    the tensors' bytes back to back."""
    dtypes = {"<f4": "F32", "<f2": "F16", "<f8": "F64", "|i1": "I8",
              "<i4": "I32", "|u1": "U8"}
    header, offset, body = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, a in arrays.items():
        data = a.tobytes()
        header[name] = {"dtype": dtypes[a.dtype.str], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        body += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + body)


def _gguf_string(s):
    return struct.pack("<Q", len(s)) + s.encode()


def _write_gguf(path, tensors, kv=()):
    """GGUF v3, alignment 32: tensors as (name, ne, ggml type, bytes); kv as
    (key, str value)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, value in kv:
        out += _gguf_string(key) + struct.pack("<I", 8) + _gguf_string(value)
    offset = 0
    for name, ne, ggml_type, data in tensors:
        out += _gguf_string(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ggml_type, offset)
        offset += -(-len(data) // 32) * 32
    out += b"\0" * (-len(out) % 32)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % 32)
    path.write_bytes(out)


def _arrays():
    rng = numpy.random.default_rng(11)
    return {"w": rng.standard_normal((4, 64)).astype("<f4"),
            "s": rng.standard_normal((2, 32)).astype("<f4"),
            "h": rng.standard_normal((3, 5)).astype("<f2"),
            "i": rng.integers(-128, 128, size=(7,)).astype("i1")}


def test_safetensors_lossless_reads_back(tmp_path):
    arrays = _arrays()
    _write_safetensors(tmp_path / "m.safetensors", arrays, {"origin": "test"})
    report = hurray.convert(tmp_path / "m.safetensors", tmp_path / "m.hrry")
    assert isinstance(report, hurray.ConvertReport)
    assert report.format == "safetensors"
    assert [t.name for t in report] == list(arrays)
    assert report.kv_entries == 1
    assert report.bytes_written == os.path.getsize(tmp_path / "m.hrry")
    for t in report:
        assert isinstance(t, hurray.ConvertedTensor)
        assert t.exact and not t.quantized
        assert t.max_abs_error == 0.0 and t.rms_error == 0.0
        assert t.shape == arrays[t.name].shape
    assert [t.type for t in report] == ["float32", "float32", "float16",
                                        "int8"]
    assert report[0].source_type == "F32" and report[0].scheme == ""
    loaded = hurray.load(tmp_path / "m.hrry")
    for name, a in arrays.items():
        got = numpy.asarray(loaded[name])
        assert got.dtype == a.dtype and got.tobytes() == a.tobytes(), name
    with hurray.open(tmp_path / "m.hrry") as f:
        assert dict(f.kv)["origin"] == "test"


def test_quantize_skip_kv_alignment_passed_through(tmp_path):
    arrays = _arrays()
    _write_safetensors(tmp_path / "m.safetensors", arrays)
    out = tmp_path / "q.hrry"
    report = hurray.convert(
        str(tmp_path / "m.safetensors"), out, quantize="per_block:int8:32",
        skip="s*", kv={"author": "pytest", "license": "MIT"},
        data_alignment=2 << 20, chunk_size=4096)
    by_name = {t.name: t for t in report}
    w = by_name["w"]
    assert w.quantized and not w.exact
    assert (w.type, w.scheme) == ("int8", "per_block_affine")
    assert 0 < w.rms_error <= w.max_abs_error < 0.05
    assert by_name["s"].exact and "skip" in by_name["s"].note
    assert by_name["i"].exact and not by_name["i"].quantized
    assert report.kv_entries == 2
    raw = out.read_bytes()
    assert int.from_bytes(raw[16:20], "little") == 2 << 20
    loaded = hurray.load(out)
    got = numpy.asarray(loaded["w"].dequantize())
    assert numpy.abs(got - arrays["w"]).max() <= w.max_abs_error
    assert numpy.asarray(loaded["s"]).tobytes() == arrays["s"].tobytes()
    with hurray.open(out) as f:
        kv = dict(f.kv)
    assert kv["author"] == "pytest" and kv["license"] == "MIT"


def test_sharded_index(tmp_path):
    arrays = _arrays()
    (tmp_path / "model").mkdir()
    _write_safetensors(tmp_path / "model" / "a.safetensors",
                       {"w": arrays["w"]})
    _write_safetensors(tmp_path / "model" / "b.safetensors",
                       {"h": arrays["h"], "i": arrays["i"]})
    (tmp_path / "model" / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 999},
                    "weight_map": {"w": "a.safetensors", "h": "b.safetensors",
                                   "i": "b.safetensors"}}))
    for src in (tmp_path / "model",
                tmp_path / "model" / "model.safetensors.index.json"):
        report = hurray.convert(src, tmp_path / "s.hrry")
        assert sorted(t.name for t in report) == ["h", "i", "w"]
        assert any("total_size" in w for w in report.warnings)
        loaded = hurray.load(tmp_path / "s.hrry")
        for name in ("w", "h", "i"):
            assert numpy.asarray(loaded[name]).tobytes() == \
                arrays[name].tobytes()


def _q8_0(values_per_block, scales):
    """Q8_0 blocks: float16 scale, 32 int8 codes."""
    out = b""
    for codes, d in zip(values_per_block, scales):
        out += numpy.float16(d).tobytes() + codes.astype("i1").tobytes()
    return out


def test_gguf_f32_and_q8_0_read_back(tmp_path):
    f = numpy.arange(8, dtype="<f4").reshape(2, 4) - 3.5
    codes = [numpy.arange(32) - 16, numpy.arange(32)[::-1] - 16]
    q = _q8_0(codes, [1.0, 0.5])
    _write_gguf(tmp_path / "m.gguf",
                [("f", [4, 2], 0, f.tobytes()), ("q", [32, 2], 8, q)],
                kv=[("general.name", "tiny")])
    report = hurray.convert(tmp_path / "m.gguf", tmp_path / "g.hrry")
    assert report.format == "gguf"
    assert [(t.name, t.source_type, t.type, t.exact) for t in report] == [
        ("f", "F32", "float32", True), ("q", "Q8_0", "int8", True)]
    assert report[1].shape == (2, 32)
    loaded = hurray.load(tmp_path / "g.hrry")
    assert numpy.asarray(loaded["f"]).tobytes() == f.tobytes()
    want = numpy.stack([codes[0] * 1.0, codes[1] * 0.5]).astype("f4")
    assert numpy.array_equal(numpy.asarray(loaded["q"].dequantize()), want)
    with hurray.open(tmp_path / "g.hrry") as h:
        assert dict(h.kv)["general.name"] == "tiny"


def test_gguf_q4_1_unsupported_then_requantized(tmp_path):
    block = numpy.float16(0.5).tobytes() + numpy.float16(-1).tobytes()
    block += bytes(range(16))
    _write_gguf(tmp_path / "u.gguf", [("u", [32, 2], 3, block * 2)])
    with pytest.raises(hurray.UnsupportedError, match="Q4_1"):
        hurray.convert(tmp_path / "u.gguf", tmp_path / "u.hrry")
    assert not (tmp_path / "u.hrry").exists()
    report = hurray.convert(tmp_path / "u.gguf", tmp_path / "u.hrry",
                            requantize="per_block:int8:32")
    assert report[0].quantized and not report[0].exact
    assert report[0].max_abs_error > 0


def test_errors(tmp_path):
    _write_safetensors(tmp_path / "m.safetensors", _arrays())
    src, out = tmp_path / "m.safetensors", tmp_path / "x.hrry"
    with pytest.raises(hurray.FileError, match="cannot open"):
        hurray.convert(tmp_path / "missing.safetensors", out)
    with pytest.raises(ValueError, match="quantize"):
        hurray.convert(src, out, quantize="per_block:int9")
    with pytest.raises(ValueError, match="data_alignment"):
        hurray.convert(src, out, data_alignment=12288)
    with pytest.raises(TypeError):
        hurray.convert(src, out, kv={"k": 1})
    with pytest.raises(TypeError):
        hurray.convert(src, out, chunk_size=1.5)
    (tmp_path / "junk").write_bytes(b"neither safetensors nor GGUF" * 4)
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.convert(tmp_path / "junk", out)
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.convert(src, out, max_buffer_bytes=64)
    assert e.value.rule == "LIMIT-BUFFER-BYTES"
    assert e.value.offset is not None
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.convert(src, out, max_safetensors_header_bytes=16)
    with pytest.raises(hurray.FileError):
        hurray.convert(src, tmp_path / "no" / "such" / "x.hrry")
    assert not out.exists()
    # A failed run leaves what was at the output as it was.
    out.write_bytes(b"old")
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.convert(src, out, max_buffer_bytes=64)
    assert out.read_bytes() == b"old"


def test_ctrl_c_stops_the_run_and_the_gil_is_released(tmp_path):
    # 16 MiB of float32 quantized (a second of work here). Ctrl-C comes
    # from a Python thread once the run's temp file (".hurray-*.tmp") is in
    # the output folder, so the run is under way whatever the machine's
    # speed; that the thread ran at all while convert ran shows the GIL was
    # released (held, convert would print "finished" first). The run stops
    # with nothing published and its temp removed.
    a = numpy.random.default_rng(3).standard_normal((1024, 4096),
                                                    dtype=numpy.float32)
    src = tmp_path / "big.safetensors"
    _write_safetensors(src, {"w": a})
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    script = textwrap.dedent(f"""
        import _thread, os, threading, time, hurray
        def interrupt_once_under_way():
            while not any(n.endswith(".tmp")
                          for n in os.listdir({str(out_dir)!r})):
                time.sleep(0.001)
            _thread.interrupt_main()
        threading.Thread(target=interrupt_once_under_way).start()
        try:
            hurray.convert({str(src)!r}, {str(out_dir / "big.hrry")!r},
                           quantize="per_block:int8:32")
            print("finished")
        except KeyboardInterrupt:
            print("interrupted", os.listdir({str(out_dir)!r}))
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["interrupted", "[]"], p.stdout
