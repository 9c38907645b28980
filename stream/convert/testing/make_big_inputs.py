#!/usr/bin/env python3
"""Writes large GGUF / safetensors inputs for measuring `hurray convert`'s
peak memory and padding (issue 46 items 4 and 5). Not used by the tests:
the files are big; run it by hand into a scratch directory, then

    /usr/bin/time -v hurray convert DIR/NAME -o DIR/out.hrry

Cases (name: what):
  gguf_long_keys     1,100 KV pairs with 64 KiB keys (a 68 MiB input)
  gguf_long_names    1,100 empty F32 tensors with 64 KiB names
  gguf_tiny_kv       1,000,000 KV pairs, 7-byte keys, uint8 values
  gguf_empty_strings one KV array of 4,000,000 empty strings
  gguf_many_tensors  50,000 one-element F32 tensors (padding)
  st_metadata        300,000 safetensors __metadata__ entries
  st_many_tensors    100,000 one-byte U8 safetensors tensors (padding)

usage: make_big_inputs.py DIR [NAME...]   (all cases without NAME)
"""
import json
import os
import struct
import sys


def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, kvs, tensors):
    """kvs: list of raw KV byte strings; tensors: (name, ne, type, data)."""
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
        for kv in kvs:
            f.write(kv)
        offset = 0
        pos = f.tell()
        infos = []
        for name, ne, ggml_type, data in tensors:
            info = gguf_string(name) + struct.pack("<I", len(ne))
            info += b"".join(struct.pack("<Q", n) for n in ne)
            info += struct.pack("<IQ", ggml_type, offset)
            infos.append(info)
            offset += (len(data) + 31) // 32 * 32
        for info in infos:
            f.write(info)
            pos += len(info)
        f.write(b"\0" * ((-pos) % 32))
        for _, _, _, data in tensors:
            f.write(data + b"\0" * ((-len(data)) % 32))


def kv_u32(key, v):
    return gguf_string(key) + struct.pack("<II", 4, v)


def kv_u8(key, v):
    return gguf_string(key) + struct.pack("<IB", 0, v)


def write_safetensors(path, header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def gguf_long_keys(path):
    kvs = [kv_u32("%05d" % i + "k" * (65535 - 5), i) for i in range(1100)]
    write_gguf(path, kvs, [])


def gguf_long_names(path):
    tensors = [("%05d" % i + "n" * (65535 - 5), [0], 0, b"")
               for i in range(1100)]
    write_gguf(path, [], tensors)


def gguf_tiny_kv(path):
    write_gguf(path, [kv_u8("k%06d" % i, i & 0xFF) for i in range(1000000)],
               [])


def gguf_empty_strings(path):
    n = 4000000
    kv = gguf_string("tokens") + struct.pack("<IIQ", 9, 8, n)
    kv += struct.pack("<Q", 0) * n
    write_gguf(path, [kv], [])


def gguf_many_tensors(path):
    tensors = [("t%05d" % i, [1], 0, struct.pack("<f", i))
               for i in range(50000)]
    write_gguf(path, [], tensors)


def st_metadata(path):
    header = {"__metadata__": {"k%06d" % i: "v" for i in range(300000)}}
    write_safetensors(path, header, b"")


def st_many_tensors(path):
    header = {"t%06d" % i: {"dtype": "U8", "shape": [1],
                            "data_offsets": [i, i + 1]}
              for i in range(100000)}
    write_safetensors(path, header, bytes(i & 0xFF for i in range(100000)))


CASES = {
    "gguf_long_keys": gguf_long_keys,
    "gguf_long_names": gguf_long_names,
    "gguf_tiny_kv": gguf_tiny_kv,
    "gguf_empty_strings": gguf_empty_strings,
    "gguf_many_tensors": gguf_many_tensors,
    "st_metadata": st_metadata,
    "st_many_tensors": st_many_tensors,
}


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for name in argv[2:] or CASES:
        CASES[name](os.path.join(out, name))
        print(name, os.path.getsize(os.path.join(out, name)))


if __name__ == "__main__":
    main(sys.argv)
