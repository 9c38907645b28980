#!/usr/bin/env python3
"""Which source and output offsets make the kernel's copy cheap on a
filesystem (issue 47 item 3, `hurray convert --data-alignment`).

Usage: bench/copy_offset_bench.py DIR [ROUNDS]   (11 rounds)

In DIR, 16 spans of 64 MiB of a warm source file are copied with
copy_file_range into a new file, each span from source offset
SRC + i * 64 MiB to output offset DST + i * 66 MiB (a hole between spans,
so every span starts at the same offset modulo 2 MiB), for each
(SRC, DST) pair below, in rotating order each round. Prints the median and
range of the copy's system CPU (getrusage) per pair, and the load average.
SRC 1544: a safetensors file whose header is padded to 8 bytes only; 4096:
one padded to a page; DST 4096: a .hrry with the default
data_buffer_alignment, 0: one with 2 MiB.
"""
import os
import resource
import statistics
import sys
import tempfile

CHUNK = 64 << 20
SPANS = 16
CASES = [(0, 0), (0, 4096), (4096, 0), (4096, 4096), (1544, 0), (1544, 4096),
         (1544, 1544)]


def main():
    base = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    print("load average at start:", open("/proc/loadavg").read().split()[:3])
    with tempfile.TemporaryDirectory(prefix="copy_offset.", dir=base) as d:
        src_path = os.path.join(d, "src")
        block = os.urandom(1 << 20)
        with open(src_path, "wb") as f:
            f.write(b"\0" * 8192)
            for _ in range(SPANS * 64 + 2):
                f.write(block)
        src = os.open(src_path, os.O_RDONLY)
        with open(src_path, "rb") as f:  # page cache warm
            while f.read(1 << 24):
                pass
        got = {c: [] for c in CASES}
        for r in range(rounds):
            for k in range(len(CASES)):
                so, do = CASES[(r + k) % len(CASES)]
                path = os.path.join(d, "dst")
                dst = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                for i in range(SPANS):
                    s, t, left = so + i * CHUNK, do + i * (CHUNK + (2 << 20)), CHUNK
                    while left:
                        n = os.copy_file_range(src, dst, left, s, t)
                        s, t, left = s + n, t + n, left - n
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                os.close(dst)
                os.unlink(path)
                got[(so, do)].append(r1.ru_stime - r0.ru_stime)
        for (so, do), v in got.items():
            print(f"src % 2 MiB = {so:4d}, dst % 2 MiB = {do:4d}: system CPU "
                  f"median {statistics.median(v):.3f} s "
                  f"[{min(v):.3f}-{max(v):.3f}]")
    print("load average at end:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
