#!/usr/bin/env python3
"""The Python binding's cost, as ratios against the C++ library measured in
the same run (issue 14's targets):

  dequantize: Tensor.dequantize(out=...) of a 64 Mi-element tensor against
      BM_DequantThreads/<scheme>/<type>/67108864/threads:1 of
      //bench:dequant_bench (Dequantizer::ConsumeWhole into a reused output,
      one thread): the binding must reach >= 0.9x. The allocating call
      (a new array each time, first-touch page faults) is shown beside it.
  Decoder.feed: one small descriptor (dense float32 [3, 4], 61 bytes) fed
      whole, per call, against BM_Decode/dense_f32/oneshot of
      //bench:decode_bench; target <= 1 us per call.

  bazel build -c opt //python:hurray //bench:dequant_bench //bench:decode_bench
  /usr/bin/python3 bench/python_bench.py [--repeat N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-out", "k8-opt", "bin")
sys.path.insert(0, os.path.join(BIN, "python"))

import numpy  # noqa: E402

import hurray  # noqa: E402

N = 64 << 20  # elements, as the C++ benchmark's DRAM size
CASES = [  # (scheme, storage, quantize args), the C++ benchmark's tensors
    ("nf4", "uint4", dict(scheme="nf4", block_size=64)),
    ("per_block", "int4", dict(scheme="per_block", dtype="int4", block_size=32,
                               symmetric=False, scale_type=hurray.float16)),
    ("per_tensor", "int8", dict(scheme="per_tensor", dtype="int8")),
]


def cxx(binary, filter_regex):
    """items_per_second (or ns per iteration) of one C++ benchmark."""
    out = subprocess.run(
        [os.path.join(BIN, "bench", binary), f"--benchmark_filter={filter_regex}",
         "--benchmark_format=json", "--benchmark_repetitions=3",
         "--benchmark_report_aggregates_only=true"],
        check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"]
            if b.get("aggregate_name") == "median"]
    if not runs:
        raise SystemExit(f"{binary}: no benchmark matched {filter_regex}")
    return runs[0]


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_dequantize(repeat):
    rng = numpy.random.default_rng(0)
    # Quantizing 64 Mi values in numpy is slow; build from 1/16 and tile the
    # codes (the dequantizer does not care what they are).
    x = rng.standard_normal((N // 4096 // 16, 4096)).astype("f4")
    rows = []
    for scheme, storage, kw in CASES:
        small = hurray.quantize(x, **kw)
        data = bytes(small.data) * 16
        aux = [bytes(b) * 16 for b in small.buffers[1:]]
        t = hurray.Tensor(data, small.dtype, (N // 4096, 4096),
                          aux_buffers=aux, quantization=small.quantization)
        out = numpy.empty(N, dtype=numpy.float32)
        t.dequantize(out=out)  # warm: pages touched once
        py_reuse = N / median_seconds(lambda: t.dequantize(out=out), repeat)
        py_alloc = N / median_seconds(lambda: t.dequantize(), repeat)
        ref = cxx("dequant_bench",
                  f"^BM_DequantThreads/{scheme}/{storage}/{N}/threads:1/real_time$")
        # UseRealTime: items_per_second is per wall second.
        c = ref["items_per_second"]
        rows.append((scheme, storage, py_reuse / c, py_alloc / c,
                     py_reuse / 1e9, c / 1e9))
    print("| scheme/storage | Python out= / C++ | Python new array / C++ "
          "| Python el/ns | C++ el/ns |")
    print("|---|---|---|---|---|")
    for s, st, r1, r2, p, c in rows:
        print(f"| {s}/{st} | {r1:.2f} | {r2:.2f} | {p:.2f} | {c:.2f} |")


def bench_feed(repeat):
    data = open(os.path.join(ROOT, "corpus", "golden", "descriptors",
                             "row_major_f32_3x4.bin"), "rb").read()
    d = hurray.Decoder()
    feed, reset = d.feed, d.reset
    calls = 200000

    def loop():
        for _ in range(calls):
            feed(data)
            reset()

    per_call = median_seconds(loop, repeat) / calls
    reset_only = median_seconds(lambda: [reset() for _ in range(calls)],
                                repeat) / calls
    ref = cxx("decode_bench", "^BM_Decode/dense_f32/oneshot$")
    cxx_ns = ref["real_time"] if ref["time_unit"] == "ns" else ref["real_time"] * 1e3
    feed_ns = (per_call - reset_only) * 1e9
    print(f"\nDecoder.feed (61-byte descriptor): {feed_ns:.0f} ns per call "
          f"(+ reset {reset_only * 1e9:.0f} ns); C++ one-shot decode "
          f"{cxx_ns:.0f} ns; Python / C++ = {feed_ns / cxx_ns:.2f}; "
          f"target <= 1000 ns: {'met' if feed_ns <= 1000 else 'missed'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"kernels: {hurray._hurray.__doc__}")
    bench_dequantize(args.repeat)
    bench_feed(args.repeat)


if __name__ == "__main__":
    main()
