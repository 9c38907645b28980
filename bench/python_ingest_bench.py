#!/usr/bin/env python3
"""hurray.ingest of one build of the Python package against another, in
alternating rounds (each round runs every case once per build, in a fresh
interpreter), reporting per case the median and range of each build's
seconds and the ratio of the medians (B / A).

The input: a .hrry of 8 NF4 tensors [1024, 2048] and 8 float32 tensors
[256, 2048] (about 26 MB) and the same tensors as a bare stream, made by
build A. Cases: the .hrry path dequantized and not, the stream path
dequantized, the stream through a file object (open(path, "rb")).

  bazel build -c opt //python:hurray    # in each tree; copy bazel-bin/python
  /usr/bin/python3 bench/python_ingest_bench.py A_DIR B_DIR [--rounds N]

A_DIR and B_DIR hold the `hurray` package (a copy of bazel-bin/python).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

MAKE = """
import sys, numpy, hurray
rng = numpy.random.default_rng(1)
ts = {}
for i in range(8):
    x = rng.standard_normal((1024, 2048)).astype("f4")
    ts[f"q{i}"] = hurray.quantize(x, "nf4", block_size=64)
    ts[f"f{i}"] = hurray.from_numpy(x[:256])
hurray.save(sys.argv[1] + "/m.hrry", ts)
with hurray.StreamWriter(sys.argv[1] + "/s.hrs") as w:
    for t in ts.values():
        w.write(t)
"""

RUN = """
import sys, time, hurray
src, deq, as_file = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
if as_file:
    src = open(src, "rb")
t0 = time.perf_counter()
for _ in hurray.ingest(src, dequantize=deq):
    pass
print(time.perf_counter() - t0)
"""

CASES = [("hrry, dequantize", "m.hrry", "1", "0"),
         ("hrry, raw", "m.hrry", "0", "0"),
         ("stream, dequantize", "s.hrs", "1", "0"),
         ("file object, dequantize", "s.hrs", "1", "1")]


def run(package, code, *args):
    env = dict(os.environ, PYTHONPATH=package)
    out = subprocess.run([sys.executable, "-c", code, *args], env=env,
                         check=True, capture_output=True, text=True)
    return out.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        run(args.a, MAKE, d)
        times = {(c[0], w): [] for c in CASES for w in "ab"}
        for _ in range(args.rounds):
            for name, path, deq, as_file in CASES:
                for which in "ab":
                    package = args.a if which == "a" else args.b
                    times[(name, which)].append(float(
                        run(package, RUN, os.path.join(d, path), deq,
                            as_file)))
    print(f"load average at the end: {os.getloadavg()}")
    print(f"{'case':28} {'A median [range] s':>26} {'B median [range] s':>26}"
          f" {'B/A':>6}")
    for name, *_ in CASES:
        a, b = times[(name, "a")], times[(name, "b")]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:28} {ma:8.4f} [{min(a):.4f}-{max(a):.4f}]"
              f" {mb:8.4f} [{min(b):.4f}-{max(b):.4f}] {mb / ma:6.2f}")


if __name__ == "__main__":
    main()
