"""Files, streams, the incremental decoder, and agreement with the C++
CLI on the corpus."""

import glob
import io
import json
import os
import socket
import struct
import threading

import numpy
import pytest

import hurray


def _tensor(seed):
    return hurray.Tensor(struct.pack("4f", seed, seed + 1, seed + 2, seed + 3),
                         hurray.float32, [4])


def test_save_and_load(tmp_path):
    path = tmp_path / "m.hrry"
    w = hurray.zeros((4, 4), dtype=hurray.float32)
    b = hurray.zeros((4,), dtype=hurray.float32)
    labels = hurray.arange(4, dtype=hurray.int32)
    hurray.save(str(path), {"weights": w, "bias": b, "labels": labels},
                kv={"model": "example", "version": 1, "ok": True,
                    "sizes": [1, 2], "pi": 3.5})
    loaded = hurray.load(str(path))
    assert list(loaded) == ["weights", "bias", "labels"]
    assert loaded["weights"].shape == (4, 4)
    assert list(numpy.asarray(loaded["labels"])) == [0, 1, 2, 3]
    subset = hurray.load(str(path), names=["bias", "labels"])
    assert list(subset) == ["bias", "labels"]
    with hurray.open(str(path)) as f:
        assert f.kv == {"model": "example", "version": 1, "ok": True,
                        "sizes": [1, 2], "pi": 3.5}
        assert "bias" in f and len(f) == 3
    # Nothing but the file itself is left in the directory.
    assert os.listdir(tmp_path) == ["m.hrry"]


def test_loaded_buffers_are_read_only_views(tmp_path):
    path = tmp_path / "m.hrry"
    hurray.save(path, {"x": hurray.from_numpy(numpy.arange(8, dtype="f4"))})
    t = hurray.load(path)["x"]
    view = numpy.asarray(t)
    with pytest.raises(ValueError):
        view[0] = 1
    del t
    assert view[3] == 3  # the map outlives the tensor while a view lives


def test_quantized_round_trip_through_a_file(tmp_path):
    x = numpy.random.default_rng(0).standard_normal((8, 64)).astype("f4")
    q = hurray.quantize(x, "per_block", dtype=hurray.int8, block_size=32)
    hurray.save(tmp_path / "q.hrry", {"w": q})
    back = hurray.load(tmp_path / "q.hrry")["w"]
    assert back.quantization == q.quantization
    assert numpy.array_equal(back.dequantize(), q.dequantize())


def test_file_errors(tmp_path):
    with pytest.raises(hurray.FileError):
        hurray.load("/nonexistent/path.hrry")
    with pytest.raises(hurray.FileError):
        hurray.load(tmp_path)
    bad = tmp_path / "bad.hrry"
    bad.write_bytes(b"HRRYFILE" + bytes(100))
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        hurray.load(bad)
    assert e.value.rule and e.value.rule.startswith("FILE-")
    with pytest.raises(KeyError):
        hurray.load(tmp_path / "missing-name.hrry" if False else _saved(tmp_path),
                    names=["nope"])


def _saved(tmp_path):
    p = tmp_path / "one.hrry"
    hurray.save(p, {"a": _tensor(0.0)})
    return p


def test_save_fails_cleanly_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "m.hrry"
    path.write_bytes(b"old")
    bad = hurray.Tensor(bytes(2048), hurray.dtype.int4, [64, 64],
                        aux_buffers=[bytes(256)],
                        quantization=hurray.NF4(0, 64, 1))
    with pytest.raises(hurray.InvalidDescriptorError):
        hurray.save(path, {"ok": _tensor(1.0), "bad": bad})
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["m.hrry"]


def test_save_into_a_missing_directory_is_a_file_error(tmp_path):
    with pytest.raises(hurray.FileError):
        hurray.save(tmp_path / "no" / "m.hrry", {"a": _tensor(0.0)})


def test_save_never_writes_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    out = tmp_path / "out"
    out.mkdir()
    # A link where the final file goes is replaced, not followed.
    os.symlink(victim, out / "m.hrry")
    hurray.save(out / "m.hrry", {"a": _tensor(0.0)})
    assert victim.read_bytes() == b"keep"
    assert not os.path.islink(out / "m.hrry")


def test_stream_in_memory_and_incremental():
    with hurray.StreamWriter() as w:
        for i in range(3):
            w.write(_tensor(float(i)))
    encoded = w.getvalue()
    got = list(hurray.StreamReader(encoded))
    assert [numpy.asarray(t)[0] for t in got] == [0.0, 1.0, 2.0]
    r = hurray.StreamReader(io.BufferedReader(io.BytesIO(encoded)),
                            chunk_size=7)
    first = next(r)
    assert first.shape == (4,) and len(list(r)) == 2


def test_stream_over_a_socket():
    producer, consumer = socket.socketpair()

    def produce():
        with hurray.StreamWriter(producer) as s:
            for i in range(4):
                s.write(_tensor(float(i * 10)))
        producer.shutdown(socket.SHUT_WR)

    th = threading.Thread(target=produce)
    th.start()
    got = [numpy.asarray(t)[0] for t in hurray.StreamReader(consumer, chunk_size=5)]
    th.join()
    producer.close()
    consumer.close()
    assert got == [0.0, 10.0, 20.0, 30.0]


def test_a_silent_socket_hits_the_idle_timeout():
    mine, theirs = socket.socketpair()
    try:
        mine.sendall(b"HRRY")  # then nothing, and the peer stays open
        with pytest.raises(hurray.StreamError) as e:
            list(hurray.StreamReader(theirs, idle_timeout=0.2))
        assert e.value.rule == "STREAM-IO"
    finally:
        mine.close()
        theirs.close()


def test_sparse_tensor_travels_whole():
    csr = hurray.Tensor(struct.pack("2f", 5.0, 7.0), hurray.float32, [2, 2],
                        aux_buffers=[struct.pack("2Q", 0, 1),
                                     struct.pack("3Q", 0, 1, 2)],
                        layout=hurray.CsrLayout(nnz=2))
    with hurray.StreamWriter() as w:
        w.write(csr)
    (back,) = list(hurray.StreamReader(w.getvalue()))
    assert back.layout == hurray.CsrLayout(nnz=2)
    assert back.buffer_count == 3 and back.nnz == 2


@pytest.mark.parametrize("cut", [1, 10, 40, -16, -1])
def test_truncated_stream_is_a_stream_error(cut):
    with hurray.StreamWriter() as w:
        w.write(_tensor(0.0))
        w.write(_tensor(1.0))
    data = w.getvalue()
    one = len(data) // 2
    cut = cut % one  # inside the descriptor, or (negative) inside the buffer
    with pytest.raises(hurray.StreamError) as e:
        list(hurray.StreamReader(data[:one + cut]))
    assert e.value.rule in ("DESC-HDR-01", "STREAM-EOF-BUFFER")
    assert isinstance(e.value, hurray.InvalidDescriptorError)


def test_declared_buffer_above_the_limit_is_refused_before_reading():
    t = hurray.from_numpy(numpy.zeros(1024, dtype="f4"))
    with hurray.StreamWriter() as w:
        w.write(t)
    with pytest.raises(hurray.InvalidDescriptorError) as e:
        list(hurray.StreamReader(w.getvalue()[:100], max_buffer_bytes=1000))
    assert e.value.rule == "LIMIT-BUFFER-BYTES"


def test_decoder_feeds_byte_by_byte(corpus):
    data = open(os.path.join(corpus, "golden", "descriptors",
                             "quant_per_block_int4_128x128.bin"), "rb").read()
    d = hurray.Decoder()
    for i, byte in enumerate(data):
        state, consumed = d.feed(data[i:i + 1])
        if state != hurray.NEED_MORE:
            break
    assert state == hurray.DONE and d.consumed == len(data)
    desc = d.descriptor
    assert desc.shape == (128, 128) and desc.dtype == hurray.dtype.int4
    assert isinstance(desc.quantization, hurray.PerBlockAffine)
    d.reset()
    state, consumed = d.feed(data + b"buffers follow")
    assert state == hurray.DONE and consumed == len(data)


def test_decoder_rejection_and_finish():
    d = hurray.Decoder()
    state, _ = d.feed(b"NOPE" + bytes(60))
    assert state == hurray.REJECTED
    rule, offset, _msg = d.rejection
    assert rule == "DESC-HDR-02" and offset == 0
    with pytest.raises(hurray.InvalidDescriptorError):
        d.raise_if_rejected()
    d.reset()
    d.feed(b"HRRY")
    assert d.finish() == hurray.REJECTED and d.rejection[0] == "DESC-HDR-01"


def test_golden_manifest(corpus):
    manifest = json.load(open(os.path.join(corpus, "golden", "manifest.json")))
    assert manifest["descriptors"]
    for entry in manifest["descriptors"]:
        data = open(os.path.join(corpus, "golden", entry["file"]), "rb").read()
        expect = entry["expect"]
        if "error" in expect or expect.get("valid") is False:
            with pytest.raises(hurray.InvalidDescriptorError):
                hurray.decode_descriptor(data)
            continue
        d, consumed = hurray.decode_descriptor(data)
        assert d.shape == tuple(expect["shape"]), entry["file"]
        assert d.dtype.tag == expect["element_type_tag"]
        assert d.layout.TAG == expect["layout_tag"]
        assert list(d.buffer_sizes) == expect["buffer_byte_sizes"]
        assert (d.quantization is not None) == expect["has_quantization"]
        assert (d.shard is not None) == expect["has_shard"]


def test_golden_file_matches_cli(corpus, cli):
    path = os.path.join(corpus, "golden", "files", "basic.hrry")
    code, out, _ = cli("inspect", "--json", path)
    assert code == 0
    expect = json.loads(out)
    f = hurray.open(path)
    assert f.names == [t["name"] for t in expect["tensors"]]
    assert {k: str(v) for k, v in f.kv.items()} == expect["kv"]
    for t in expect["tensors"]:
        assert list(f[t["name"]].shape) == t["descriptor"]["shape"]


def test_every_corpus_verdict_matches_the_cli(corpus, cli):
    """Each descriptor of our corpus: Python accepts what `hurray validate`
    accepts, and refuses the rest with the same rule id and offset."""
    files = sorted(glob.glob(os.path.join(corpus, "descriptors", "*.bin")))
    assert len(files) > 100
    rejected = 0
    for path in files:
        code, out, _ = cli("validate", path)
        data = open(path, "rb").read()
        if code == 0:
            hurray.decode_descriptor(data)
            continue
        assert code == 1, out
        rejected += 1
        rule, offset = out.split(": ", 1)[1].split(" at ")[0], None
        with pytest.raises(hurray.InvalidDescriptorError) as e:
            hurray.decode_descriptor(data)
        assert e.value.rule == rule, path
        assert f"at byte {e.value.offset}:" in out or e.value.offset is None, out
    assert rejected > 50


def test_python_stream_dequantizes_like_the_cli(tmp_path, cli):
    rng = numpy.random.default_rng(3)
    x = rng.standard_normal((16, 96)).astype("f4")
    cases = [("per_tensor", {}), ("per_channel", {"dtype": hurray.uint8}),
             ("per_block", {"dtype": hurray.dtype.int4, "block_size": 32}),
             ("nf4", {"block_size": 64}), ("mxfp", {"dtype": hurray.dtype.float6_e2m3})]
    for scheme, kw in cases:
        t = hurray.quantize(x, scheme, axis=1, **kw)
        src = tmp_path / f"{scheme}.hrs"
        with open(src, "wb") as f, hurray.StreamWriter(f) as w:
            w.write(t)
        out = tmp_path / f"{scheme}.npy"
        code, stdout, stderr = cli("dequant", src, "-o", out)
        assert code == 0, stderr
        ours = t.dequantize()
        theirs = numpy.load(out)
        assert theirs.shape == ours.shape
        assert ours.tobytes() == theirs.tobytes(), scheme


def test_cli_pack_and_python_load_agree(tmp_path, cli):
    x = numpy.arange(24, dtype="f4").reshape(4, 6)
    t = hurray.quantize(x, "per_channel", dtype=hurray.int8, axis=0)
    src = tmp_path / "w.hrs"
    with open(src, "wb") as f, hurray.StreamWriter(f) as w:
        w.write(t)
    packed = tmp_path / "m.hrry"
    code, _, err = cli("pack", "-o", packed, f"w={src}")
    assert code == 0, err
    back = hurray.load(packed)["w"]
    assert numpy.array_equal(back.dequantize(), t.dequantize())
    ours = tmp_path / "ours.hrry"
    hurray.save(ours, {"w": t})
    code, out, err = cli("inspect", "--json", ours)
    assert code == 0, err
    assert json.loads(out)["tensors"][0]["name"] == "w"


def test_ingest_a_file_and_a_stream(tmp_path):
    x = numpy.random.default_rng(5).standard_normal((4, 32)).astype("f4")
    t = hurray.quantize(x, "nf4", axis=1, block_size=32)
    hurray.save(tmp_path / "m.hrry", {"a": t, "b": hurray.from_numpy(x)})
    got = dict(hurray.ingest(str(tmp_path / "m.hrry")))
    assert numpy.array_equal(got["a"], t.dequantize())
    assert numpy.array_equal(got["b"], x)
    with open(tmp_path / "s.hrs", "wb") as f, hurray.StreamWriter(f) as w:
        w.write(t)
    (name, values), = list(hurray.ingest(str(tmp_path / "s.hrs")))
    assert name == "tensor_0" and numpy.array_equal(values, t.dequantize())
