#!/usr/bin/python3
"""Writes a GGUF file of K-quant tensors for bench/convert_bench.sh.

Usage: make_kquant_gguf.py OUT TYPE MIB [TENSORS]   (TYPE: Q4_K, Q6_K, ...)

TENSORS tensors (default 16) of [rows, 4096] elements, about MIB MiB in all.
Blocks are random bytes (numpy, seed 1) with float16 d and dmin set to
0.01 / 0.005 and sub-block scales in 16..63 (Q2_K: 8..15), so that ggml's
minimum m1 is at most 2 of its steps d1, as in quantized weights (a
sub-block's m1 / d1 is about -min / (max - min) * 15 there). Q3_K's scales
are left random (a zero scale sc - 32 would need codes of one sign).
"""
import struct
import sys

import numpy as np

# ggml type id, bytes per block of 256, offset of fp16 d (and dmin: d + 2),
# offset and length of the packed scales.
TYPES = {
    "Q2_K": (10, 84, 80, 0, 16),
    "Q3_K": (11, 110, 108, 96, 12),
    "Q4_K": (12, 144, 0, 4, 12),
    "Q5_K": (13, 176, 0, 4, 12),
    "Q6_K": (14, 210, 208, 192, 16),
}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def main(argv):
    out, name, mib = argv[1], argv[2], float(argv[3])
    n = int(argv[4]) if len(argv) > 4 else 16
    tid, bb, d_at, sc_at, sc_len = TYPES[name]
    total = int(mib * (1 << 20))
    rows = max(1, total // n // (16 * bb))  # 16 blocks per row of 4096
    blocks = rows * 16
    rng = np.random.default_rng(1)
    info, off = b"", 0
    for i in range(n):
        info += gguf_string(f"t{i}") + struct.pack("<I", 2)
        info += struct.pack("<QQ", 4096, rows) + struct.pack("<I", tid)
        info += struct.pack("<Q", off)
        off += blocks * bb
        off += -off % 32
    head = b"GGUF" + struct.pack("<IQQ", 3, n, 0) + info
    head += b"\0" * (-len(head) % 32)
    # One tensor's blocks, written n times.
    data = rng.integers(0, 256, size=(blocks, bb), dtype=np.uint8)
    if name in ("Q4_K", "Q5_K"):
        # scales[12]: 6-bit sc j (j < 4: low 6 bits of byte j; j >= 4: low
        # nibble of byte j+4 with bits 6-7 of byte j-4 on top), m likewise.
        sc = data[:, sc_at:sc_at + 12]
        sc[:, 0:4] = (sc[:, 0:4] & 0xC0) | 0x10 | (sc[:, 0:4] & 0x2F)
        sc[:, 0:4] |= 0x40  # high bits of sc 4..7 -> 16..63
    elif name == "Q6_K":
        sc = data[:, sc_at:sc_at + 16]
        sc[:] = (sc & 0x2F) | 0x10  # int8 sub-block scales in 16..63
    elif name == "Q2_K":
        sc = data[:, 0:16]
        sc[:] = (sc & 0xF0) | 0x08 | (sc & 0x07)  # sc in 8..15, m 0..15
    d = np.frombuffer(struct.pack("<e", 0.01), dtype=np.uint8)
    dmin = np.frombuffer(struct.pack("<e", 0.005), dtype=np.uint8)
    data[:, d_at:d_at + 2] = d
    if name in ("Q2_K", "Q4_K", "Q5_K"):
        data[:, d_at + 2:d_at + 4] = dmin
    pad = b"\0" * (-(blocks * bb) % 32)
    raw = data.tobytes()
    with open(out, "wb") as f:
        f.write(head)
        for _ in range(n):
            f.write(raw)
            f.write(pad)


if __name__ == "__main__":
    main(sys.argv)
