#!/usr/bin/env python3
"""What the output's layout costs the kernel's copy (issue 47 item 3).

Usage: bench/copy_alignment_bench.py DIR [ROUNDS] [MIB]   (7 rounds, 1024 MiB)

In DIR, a MIB-byte source file (page cache warm) is copied with
copy_file_range into a new file in four layouts, in rotating order each
round, and the copy's system CPU time (getrusage) is taken:
  whole:     one call, as `cp` does;
  chunks:    64 MiB calls at explicit source offsets, output back to back;
  hdr_4k:    each 64 MiB chunk after a 4096-byte write, as `hurray convert`
             lays out a .hrry (a descriptor, then the buffer on its 4096-byte
             boundary, FILE-REG-02);
  hdr_2m:    the same, each chunk moved on to a 2 MiB boundary of the output
             (a hole in between: no bytes written).
Prints the median and range of each, and of each / whole per round, and the
load average. A page-cache folio larger than 4 KiB must start at a file
offset that is a multiple of its size: an output offset that is only
4096-aligned limits the destination to 4 KiB folios.
"""
import os
import resource
import statistics
import sys
import tempfile

CHUNK = 64 << 20


def copy(mode, src, size, path):
    dst = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    if mode == "whole":
        off = 0
        while off < size:
            off += os.copy_file_range(src, dst, size - off, off)
    else:
        off = 0
        while off < size:
            if mode != "chunks":
                os.write(dst, b"\0" * 4096)
            if mode == "hdr_2m":
                pos = os.lseek(dst, 0, os.SEEK_CUR)
                os.lseek(dst, -pos % (2 << 20), os.SEEK_CUR)
            off += os.copy_file_range(src, dst, min(CHUNK, size - off), off)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    os.close(dst)
    os.unlink(path)
    return r1.ru_stime - r0.ru_stime


def main():
    base = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    mib = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    modes = ["whole", "chunks", "hdr_4k", "hdr_2m"]
    with tempfile.TemporaryDirectory(prefix="copy_alignment.", dir=base) as d:
        src_path = os.path.join(d, "src")
        block = os.urandom(1 << 20)
        with open(src_path, "wb") as f:
            for _ in range(mib):
                f.write(block)
        src = os.open(src_path, os.O_RDONLY)
        size = os.fstat(src).st_size
        with open(src_path, "rb") as f:
            while f.read(1 << 24):
                pass
        print("load average at start:", open("/proc/loadavg").read().split()[:3])
        t = {m: [] for m in modes}
        for r in range(rounds):
            for k in range(len(modes)):
                m = modes[(r + k) % len(modes)]
                t[m].append(copy(m, src, size, os.path.join(d, "out")))
        print("load average at end:", open("/proc/loadavg").read().split()[:3])
        os.close(src)
    for m in modes:
        v = t[m]
        rel = [a / b for a, b in zip(v, t["whole"]) if b > 0]
        print(f"{base} {m:7s} system CPU median {statistics.median(v):.3f} s "
              f"[{min(v):.3f}-{max(v):.3f}], / whole (same round) median "
              f"{statistics.median(rel):.2f} [{min(rel):.2f}-{max(rel):.2f}]")


if __name__ == "__main__":
    main()
