"""`hurray ingest --dequant` outputs that numpy loads (issue 16 part 2):
every .npy file through numpy.load with no extra arguments, its shape, dtype
and values against the arrays the file was written from, in every layout the
package writes; --format f32 and --dtype."""

import json
import os

import numpy
import pytest

import hurray


def _model(tmp_path):
    """A .hrry file of plain tensors in several layouts and types, and a
    quantized one; returns its path and {name: expected numpy array}."""
    rng = numpy.random.default_rng(7)
    f32 = rng.standard_normal((3, 4)).astype("<f4")
    f16 = rng.standard_normal((3, 5)).astype("<f2")
    i16 = rng.integers(-30000, 30000, size=(4, 3)).astype("<i2")
    u8 = rng.integers(0, 255, size=(6,)).astype("u1")
    f64 = numpy.array(2.5, dtype="<f8")
    i64 = rng.integers(-2**62, 2**62, size=(2, 2)).astype("<i8")
    flags = numpy.array([True, False, True, True, False, False, True, False,
                         True, True, False])
    bf_bits = numpy.array([0x3F80, 0xC020, 0x7F61], dtype="<u2")
    bf = (bf_bits.astype("<u4") << 16).view("<f4")  # 1, -2.5, ~2.99e38
    x = rng.standard_normal((8, 64)).astype("f4")
    q = hurray.quantize(x, "per_block", dtype=hurray.dtype.int4, block_size=32,
                        axis=1)
    # Strided: dimension 0 inner (stride 1), dimension 1 outer (stride 5),
    # with a gap of one element per column.
    strided_store = numpy.zeros(5 * 3, dtype="<i2")
    for r in range(4):
        for c in range(3):
            strided_store[r + 5 * c] = i16[r, c]
    tensors = {
        "f32": hurray.from_numpy(f32),
        "f16_cm": hurray.Tensor(numpy.asfortranarray(f16).tobytes(order="A"),
                                hurray.float16, f16.shape,
                                layout=hurray.ColumnMajorLayout()),
        "i16_strided": hurray.Tensor(strided_store.tobytes(), hurray.int16,
                                     i16.shape,
                                     layout=hurray.StridedLayout([1, 5])),
        "u8": hurray.from_numpy(u8),
        "f64_scalar": hurray.Tensor(f64.tobytes(), hurray.float64, ()),
        "i64": hurray.from_numpy(i64),
        "flags": hurray.Tensor(numpy.packbits(flags, bitorder="little")
                               .tobytes(), hurray.dtype.bool, flags.shape),
        "bf16": hurray.Tensor(bf_bits.tobytes(), hurray.dtype.bfloat16, [3]),
        "q": q,
    }
    expected = {"f32": f32, "f16_cm": f16, "i16_strided": i16, "u8": u8,
                "f64_scalar": f64, "i64": i64, "flags": flags,
                "bf16": bf, "q": q.dequantize()}
    path = tmp_path / "m.hrry"
    hurray.save(str(path), tensors)
    return path, expected


def _ingest(cli, src, out, *flags):
    code, stdout, stderr = cli("ingest", src, "--dequant", out, *flags)
    assert code == 0, stderr + stdout
    assert "skipped" not in stdout, stdout
    return stdout


def test_every_npy_output_loads_in_numpy(tmp_path, cli):
    src, expected = _model(tmp_path)
    out = tmp_path / "out"
    _ingest(cli, src, out)
    assert sorted(os.listdir(out)) == sorted(f"{n}.npy" for n in expected)
    for name, want in expected.items():
        got = numpy.load(out / f"{name}.npy")
        assert got.shape == want.shape, name
        # bfloat16 has no numpy dtype: float32; every other type is kept.
        assert got.dtype == want.dtype, name
        assert got.tobytes() == want.tobytes(), name


def test_npy_headers_are_what_numpy_writes(tmp_path, cli):
    src, expected = _model(tmp_path)
    out = tmp_path / "out"
    _ingest(cli, src, out)
    for name, want in expected.items():
        mine = (out / f"{name}.npy").read_bytes()
        numpy.save(tmp_path / "ref.npy", want)
        assert mine == (tmp_path / "ref.npy").read_bytes(), name


def test_f32_format_and_dtype_float16(tmp_path, cli):
    src, expected = _model(tmp_path)
    out = tmp_path / "f32"
    _ingest(cli, src, out, "--format", "f32")
    for name, want in expected.items():
        got = numpy.fromfile(out / f"{name}.f32", dtype="<f4")
        assert got.tobytes() == want.astype("<f4").ravel().tobytes(), name
    out = tmp_path / "f16"
    _ingest(cli, src, out, "--dtype", "float16")
    for name, want in expected.items():
        got = numpy.load(out / f"{name}.npy")
        assert got.dtype == numpy.float16 and got.shape == want.shape, name
        # One rounding from the exact value (numpy's float64 -> float16 is
        # round to nearest even too).
        ref = want.astype("<f8").astype("<f2")
        assert got.tobytes() == ref.tobytes(), name


def test_npy_refuses_bfloat16(tmp_path, cli):
    src, _ = _model(tmp_path)
    code, _, stderr = cli("ingest", src, "--dequant", tmp_path / "o",
                          "--dtype", "bfloat16")
    assert code == 2 and "bfloat16" in stderr


def test_dequant_command_writes_npy(tmp_path, cli):
    x = numpy.random.default_rng(1).standard_normal((4, 32)).astype("f4")
    t = hurray.quantize(x, "per_channel", dtype=hurray.int8, axis=0)
    src = tmp_path / "t.hrs"
    with open(src, "wb") as f, hurray.StreamWriter(f) as w:
        w.write(t)
    code, _, stderr = cli("dequant", src, "-o", tmp_path / "t.npy")
    assert code == 0, stderr
    got = numpy.load(tmp_path / "t.npy")
    assert got.dtype == numpy.float32
    assert got.tobytes() == t.dequantize().tobytes()
    # The same formats as ingest: one tensor in a safetensors file, named
    # after FILE's stem.
    code, _, stderr = cli("dequant", src, "-o", tmp_path / "t.safetensors",
                          "--format", "safetensors", "--dtype", "float16")
    assert code == 0, stderr
    _, tensors = _read_safetensors(tmp_path / "t.safetensors")
    assert list(tensors) == ["t"]
    dtype, a = tensors["t"]
    assert dtype == "F16" and a.shape == (4, 32)
    assert a.tobytes() == t.dequantize().astype("<f2").tobytes()


_ST_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I8": "i1",
              "U8": "u1", "I16": "<i2", "U16": "<u2", "I32": "<i4",
              "U32": "<u4", "I64": "<i8", "U64": "<u8", "BOOL": "?",
              "BF16": "<u2"}


def _read_safetensors(path):
    """A small safetensors reader: JSON header, then numpy views."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    out, end = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = e["data_offsets"]
        assert begin == end  # contiguous, in order, no gaps
        end = stop
        a = numpy.frombuffer(body[begin:stop], dtype=_ST_DTYPES[e["dtype"]])
        if e["dtype"] == "BF16":  # numpy has none: widen the bits
            a = (a.astype("<u4") << 16).view("<f4")
        out[name] = (e["dtype"], a.reshape(e["shape"]))
    assert end == len(body)
    return meta, out


def test_safetensors_output_holds_every_tensor(tmp_path, cli):
    src, expected = _model(tmp_path)
    out = tmp_path / "st"
    _ingest(cli, src, out, "--format", "safetensors")
    assert os.listdir(out) == ["model.safetensors"]
    meta, tensors = _read_safetensors(out / "model.safetensors")
    assert set(tensors) == set(expected)
    assert tensors["bf16"][0] == "BF16"  # kept: safetensors has it
    assert tensors["q"][0] == "F32"
    for name, want in expected.items():
        dtype, got = tensors[name]
        assert got.shape == want.shape, name
        assert got.tobytes() == want.astype(got.dtype).tobytes(), name
    assert meta == {}


def test_safetensors_metadata_and_dtype(tmp_path, cli):
    src, expected = _model(tmp_path)
    hurray.save(str(src), {"w": hurray.from_numpy(expected["f32"])},
                kv={"model": "m", "layers": 2, "ok": True, "sizes": [1, 2]})
    out = tmp_path / "st"
    _ingest(cli, src, out, "--format", "safetensors", "--dtype", "bfloat16")
    meta, tensors = _read_safetensors(out / "model.safetensors")
    assert meta == {"model": "m", "layers": "2", "ok": "true",
                    "sizes": "[1,2]"}
    dtype, got = tensors["w"]
    assert dtype == "BF16"
    # Round to nearest even from float32: numpy has no bfloat16, so by the
    # bits (no NaN here).
    bits = expected["f32"].view("<u4").astype("<u8")
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    assert got.tobytes() == rounded.astype("<u4").view("<f4").tobytes()


def test_safetensors_refuses_resume(tmp_path, cli):
    src, _ = _model(tmp_path)
    code, _, stderr = cli("ingest", src, "--dequant", tmp_path / "o",
                          "--format", "safetensors", "--resume",
                          tmp_path / "state")
    assert code == 2 and "resume" in stderr


def _u64(a):
    return numpy.asarray(a, dtype="<u8").tobytes()


def _sparse_model(tmp_path):
    """COO, CSR, CSC and CSF tensors and their dense numpy arrays."""
    rng = numpy.random.default_rng(11)
    dense2 = numpy.zeros((4, 5), dtype="<f4")
    dense2[0, 1], dense2[2, 0], dense2[2, 4], dense2[3, 3] = 1.5, -2, 3, 4
    rows, cols = numpy.nonzero(dense2)  # row-major order
    coo_idx = numpy.stack([rows, cols], axis=1)
    perm = rng.permutation(len(rows))  # COO need not be sorted
    coo = hurray.Tensor(dense2[rows, cols][perm].tobytes(), hurray.float32,
                        dense2.shape, aux_buffers=(_u64(coo_idx[perm]),),
                        layout=hurray.CooLayout(len(rows)))
    row_ptr = numpy.searchsorted(rows, numpy.arange(5))
    csr = hurray.Tensor(dense2[rows, cols].tobytes(), hurray.float32,
                        dense2.shape, aux_buffers=(_u64(cols), _u64(row_ptr)),
                        layout=hurray.CsrLayout(len(rows)))
    i16 = numpy.zeros((3, 4), dtype="<i2")
    i16[1, 0], i16[0, 2], i16[2, 2] = 7, -3, 9
    c_cols, c_rows = numpy.nonzero(i16.T)  # column-major order
    col_ptr = numpy.searchsorted(c_cols, numpy.arange(5))
    csc = hurray.Tensor(i16[c_rows, c_cols].tobytes(), hurray.int16, i16.shape,
                        aux_buffers=(_u64(c_rows), _u64(col_ptr)),
                        layout=hurray.CscLayout(len(c_rows)))
    # CSF, rank 3, mode order [2, 0, 1].
    d3 = numpy.zeros((2, 3, 4), dtype="<f8")
    d3[0, 1, 3], d3[1, 2, 3], d3[1, 0, 0] = 1.25, -8, 0.5
    order = [2, 0, 1]
    pts = sorted(zip(*numpy.nonzero(d3)), key=lambda p: [p[m] for m in order])
    bufs, prev = [], [()]
    for level in range(3):
        pos, crd, nodes = [0], [], []
        for parent in prev:
            kids = sorted({tuple(p[m] for m in order[:level + 1])
                           for p in pts
                           if tuple(p[m] for m in order[:level]) == parent})
            crd += [k[-1] for k in kids]
            nodes += kids
            pos.append(len(crd))
        bufs += [_u64(pos), _u64(crd)]
        prev = nodes
    vals = numpy.array([d3[tuple(p)] for p in pts], dtype="<f8")
    csf = hurray.Tensor(vals.tobytes(), hurray.float64, d3.shape,
                        aux_buffers=tuple(bufs),
                        layout=hurray.CsfLayout(len(vals), order))
    path = tmp_path / "sparse.hrry"
    hurray.save(str(path), {"coo": coo, "csr": csr, "csc": csc, "csf": csf})
    return path, {"coo": dense2, "csr": dense2, "csc": i16, "csf": d3}


def _sparse_arrays():
    """What --sparse keep writes for _sparse_model's tensors, computed again
    from the same dense arrays: {file name: numpy array}."""
    path_arrays = {}
    dense2 = numpy.zeros((4, 5), dtype="<f4")
    dense2[0, 1], dense2[2, 0], dense2[2, 4], dense2[3, 3] = 1.5, -2, 3, 4
    rows, cols = numpy.nonzero(dense2)
    perm = numpy.random.default_rng(11).permutation(len(rows))
    path_arrays["coo.values"] = dense2[rows, cols][perm]
    path_arrays["coo.indices"] = numpy.stack([rows, cols], axis=1)[perm]
    path_arrays["csr.values"] = dense2[rows, cols]
    path_arrays["csr.indices"] = cols
    path_arrays["csr.indptr"] = numpy.searchsorted(rows, numpy.arange(5))
    return {k: (v.astype("<u8") if "ind" in k else v)
            for k, v in path_arrays.items()}


def test_sparse_tensors_are_written_dense(tmp_path, cli):
    src, expected = _sparse_model(tmp_path)
    out = tmp_path / "out"
    stdout = _ingest(cli, src, out)
    assert stdout.count("densified") == 4, stdout
    for name, want in expected.items():
        got = numpy.load(out / f"{name}.npy")
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), name
    out = tmp_path / "st"
    _ingest(cli, src, out, "--format", "safetensors")
    _, tensors = _read_safetensors(out / "model.safetensors")
    for name, want in expected.items():
        assert tensors[name][1].tobytes() == want.tobytes(), name


def test_sparse_above_max_dense_bytes_is_kept_as_arrays(tmp_path, cli):
    src, expected = _sparse_model(tmp_path)
    out = tmp_path / "out"
    stdout = _ingest(cli, src, out, "--max-dense-bytes", "80")
    # 4x5 float32 = 80 bytes fits; the int16 3x4 = 24 too; the 2x3x4
    # float64 = 192 does not: its values and pos/crd arrays, per level.
    csf = ["csf.values.npy"] + [f"csf.{a}_{l}.npy" for l in range(3)
                                for a in ("pos", "crd")]
    assert sorted(os.listdir(out)) == sorted(
        ["coo.npy", "csc.npy", "csr.npy"] + csf)
    assert "kept sparse" in stdout
    d3 = expected["csf"]
    order = [2, 0, 1]
    pts = sorted(zip(*numpy.nonzero(d3)), key=lambda p: [p[m] for m in order])
    values = numpy.load(out / "csf.values.npy")
    assert values.dtype == numpy.float64
    assert values.tolist() == [d3[tuple(p)] for p in pts]
    # The leaf coordinates are the last mode's, in tree order.
    crd2 = numpy.load(out / "csf.crd_2.npy")
    assert crd2.dtype == numpy.uint64
    assert crd2.tolist() == [p[order[2]] for p in pts]
    assert numpy.load(out / "csf.pos_0.npy").tolist()[0] == 0
    # A resumable run keeps the same arrays, byte for byte (issue 16).
    out2 = tmp_path / "resumable"
    code, stdout, stderr = cli("ingest", src, "--dequant", out2,
                               "--max-dense-bytes", "80", "--resume",
                               tmp_path / "state")
    assert code == 0, stderr
    assert sorted(os.listdir(out2)) == sorted(os.listdir(out))
    for name in os.listdir(out):
        assert (out2 / name).read_bytes() == (out / name).read_bytes(), name


def test_sparse_keep_arrays_load_in_numpy(tmp_path, cli):
    src, _ = _sparse_model(tmp_path)
    out = tmp_path / "out"
    _ingest(cli, src, out, "--sparse", "keep")
    for name, want in _sparse_arrays().items():
        got = numpy.load(out / f"{name}.npy")
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), name
    assert sorted(os.listdir(out)) == sorted(
        ["coo.values.npy", "coo.indices.npy", "csr.values.npy",
         "csr.indices.npy", "csr.indptr.npy", "csc.values.npy",
         "csc.indices.npy", "csc.indptr.npy", "csf.values.npy"] +
        [f"csf.{a}_{l}.npy" for l in range(3) for a in ("pos", "crd")])
    out = tmp_path / "st"
    _ingest(cli, src, out, "--sparse", "keep", "--format", "safetensors")
    _, tensors = _read_safetensors(out / "model.safetensors")
    for name, want in _sparse_arrays().items():
        assert tensors[name][1].tobytes() == want.tobytes(), name
    # Resumable too (issue 16): the same arrays, byte for byte.
    out = tmp_path / "out"
    code, _, stderr = cli("ingest", src, "--dequant", tmp_path / "r",
                          "--sparse", "keep", "--resume", tmp_path / "s")
    assert code == 0, stderr
    assert sorted(os.listdir(tmp_path / "r")) == sorted(os.listdir(out))
    for name in os.listdir(out):
        assert (tmp_path / "r" / name).read_bytes() == \
            (out / name).read_bytes(), name


def _paged_stream(tmp_path, corpus, name, buffers):
    """A bare stream: the corpus descriptor `name`, then its buffers."""
    with open(os.path.join(corpus, "descriptors", name), "rb") as f:
        desc = f.read()
    path = tmp_path / (name + ".hrs")
    path.write_bytes(desc + b"".join(b.tobytes() for b in buffers))
    return path


def test_block_paged_outputs_load_in_numpy(tmp_path, cli, corpus):
    """layouts/block-paged.md § Element Lookup: token t of a sequence is
slot t % page_size of page block_table[seq_ptr[s] + t // page_size]."""
    rng = numpy.random.default_rng(5)
    # float16 [16, 2, 8], 4 pages of 4 tokens, one sequence: 16 tokens.
    pool = rng.standard_normal((4, 4, 2, 8)).astype("<f2")
    table = numpy.array([2, 0, 3, 1], dtype="<u4")
    src = _paged_stream(tmp_path, corpus, "layout_block_paged_f16_16x2x8.bin",
                        [pool, table, numpy.array([0, 4], dtype="<u4")])
    out = tmp_path / "out"
    _ingest(cli, src, out)
    got = numpy.load(out / "tensor_0.npy")
    assert got.dtype == numpy.float16 and got.shape == (16, 2, 8)
    assert got.tobytes() == pool[table].reshape(16, 2, 8).tobytes()
    _ingest(cli, src, tmp_path / "st", "--format", "safetensors")
    _, tensors = _read_safetensors(tmp_path / "st" / "model.safetensors")
    assert tensors["tensor_0"][0] == "F16"
    assert tensors["tensor_0"][1].tobytes() == got.tobytes()
    # int8 [40, 2, 8], pages of 16, 2 sequences owning 1 and 2 pages: their
    # token counts are not in the file, so every slot of the 3 pages comes
    # out, dequantized with its page slot's float16 scale.
    codes = rng.integers(-128, 128, size=(4, 16, 2, 8)).astype("i1")
    scales = rng.uniform(0.01, 1, size=(4, 16)).astype("<f2")
    table = numpy.array([3, 0, 3], dtype="<u4")
    src = _paged_stream(tmp_path, corpus, "block_paged_int8_pba.bin",
                        [codes, table, numpy.array([0, 1, 3], dtype="<u4"),
                         scales])
    out = tmp_path / "out_q"
    stdout = _ingest(cli, src, out)
    assert "every slot of its 3 logical pages" in stdout
    got = numpy.load(out / "tensor_0.npy")
    want = (codes.astype("f4") * scales.astype("f4")[:, :, None, None])[table]
    assert got.dtype == numpy.float32 and got.shape == (48, 2, 8)
    assert got.tobytes() == want.reshape(48, 2, 8).tobytes()


def test_safetensors_round_trip_through_convert(tmp_path, cli):
    """safetensors -> hurray convert -> ingest --format safetensors gives
    back the same dtypes, shapes and bytes (issue 16 part 3)."""
    rng = numpy.random.default_rng(5)
    arrays = {
        "F64": rng.standard_normal((2, 3)).astype("<f8"),
        "F32": rng.standard_normal((3, 4)).astype("<f4"),
        "F16": rng.standard_normal((5,)).astype("<f2"),
        "BF16": rng.integers(0, 2**16, size=(2, 2)).astype("<u2") & 0x7F7F,
        "I64": rng.integers(-2**62, 2**62, size=(3,)).astype("<i8"),
        "I32": rng.integers(-2**31, 2**31, size=(2, 2)).astype("<i4"),
        "I16": rng.integers(-2**15, 2**15, size=(4,)).astype("<i2"),
        "I8": rng.integers(-128, 128, size=(3,)).astype("i1"),
        "U8": rng.integers(0, 256, size=(3,)).astype("u1"),
        "BOOL": numpy.array([True, False, True]),
    }
    header, offset, body = {}, 0, b""
    for dtype, a in arrays.items():
        data = a.tobytes()
        header[f"t_{dtype}"] = {"dtype": dtype, "shape": list(a.shape),
                                "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        body += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    src = tmp_path / "in.safetensors"
    src.write_bytes(len(text).to_bytes(8, "little") + text + body)
    code, _, stderr = cli("convert", src, "-o", tmp_path / "m.hrry")
    assert code == 0, stderr
    _ingest(cli, tmp_path / "m.hrry", tmp_path / "out", "--format",
            "safetensors")
    _, tensors = _read_safetensors(tmp_path / "out" / "model.safetensors")
    for dtype, a in arrays.items():
        got_dtype, got = tensors[f"t_{dtype}"]
        assert got_dtype == dtype
        assert got.shape == a.shape
        if dtype == "BF16":  # the reader widened it to float32
            got = (got.view("<u4") >> 16).astype("<u2")
        assert got.tobytes() == a.tobytes(), dtype


def test_convert_with_2mib_data_alignment_reads_back(tmp_path, cli):
    """convert --data-alignment 2097152 (issue 47 item 3): the file declares
    2 MiB, every buffer starts at a multiple of it, and validate, inspect,
    ingest (CLI and Python) and hurray.load give the source's bytes back;
    the same through a 2-shard model, whose tensors the kernel copies."""
    rng = numpy.random.default_rng(7)
    arrays = {
        "a": rng.standard_normal((300, 1031)).astype("<f4"),
        "b": rng.integers(-128, 128, size=(5,)).astype("i1"),
        "c": rng.standard_normal((3, 70000)).astype("<f2"),
    }

    def write_st(path, names):
        header, offset, body = {}, 0, b""
        for name in names:
            data = arrays[name].tobytes()
            header[name] = {
                "dtype": {"<f4": "F32", "|i1": "I8", "<f2": "F16"}[
                    arrays[name].dtype.str],
                "shape": list(arrays[name].shape),
                "data_offsets": [offset, offset + len(data)]}
            offset += len(data)
            body += data
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        path.write_bytes(len(text).to_bytes(8, "little") + text + body)

    write_st(tmp_path / "model.safetensors", ["a", "b", "c"])
    shards = tmp_path / "sharded"
    shards.mkdir()
    write_st(shards / "model-00001-of-00002.safetensors", ["a"])
    write_st(shards / "model-00002-of-00002.safetensors", ["b", "c"])
    (shards / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {}, "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
            "c": "model-00002-of-00002.safetensors"}}))
    for src, out in [(tmp_path / "model.safetensors", tmp_path / "m.hrry"),
                     (shards / "model.safetensors.index.json",
                      tmp_path / "s.hrry")]:
        code, _, stderr = cli("convert", src, "-o", out,
                              "--data-alignment", "2097152")
        assert code == 0, stderr
        raw = out.read_bytes()
        assert int.from_bytes(raw[16:20], "little") == 2 << 20
        for name, a in arrays.items():
            at = raw.find(a.tobytes())
            assert at > 0 and at % (2 << 20) == 0, (name, at)
        code, stdout, stderr = cli("validate", out)
        assert code == 0 and "OK (3 tensors)" in stdout, stderr + stdout
        code, stdout, stderr = cli("inspect", out)
        assert code == 0, stderr
        loaded = hurray.load(str(out))
        streamed = dict(hurray.ingest(str(out)))
        for name, a in arrays.items():
            got = numpy.asarray(loaded[name])
            assert got.dtype == a.dtype and got.tobytes() == a.tobytes(), name
            # ingest gives values (float16 may come widened): exact either way
            got = numpy.asarray(streamed[name])
            assert got.shape == a.shape and numpy.array_equal(got, a), name
        _ingest(cli, out, tmp_path / ("st_" + out.stem), "--format",
                "safetensors")
        _, tensors = _read_safetensors(
            tmp_path / ("st_" + out.stem) / "model.safetensors")
        for name, a in arrays.items():
            assert tensors[name][1].tobytes() == a.tobytes(), name
