#!/usr/bin/env python3
"""Two builds of one Google Benchmark binary, before (A) and after (B) a
change, in alternating rounds (A B, B A, A B, ...): for each benchmark, the
median and range of B's time over A's of the same round, and of each
binary's within-run ratios (a benchmark over a baseline benchmark of the
same run, --ratio NAME=BASE), which hold better than absolute times on a
shared machine.

  bench/ab_rounds.py BEFORE_BIN AFTER_BIN --rounds 6 \\
      --filter 'BM_(a_ReadOnly|b_CpuDequant|c_LoaderValidate|c_LoaderDequant)' \\
      --ratio c_LoaderDequant=b_CpuDequant --ratio c_LoaderValidate=a_ReadOnly
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(binary, flt, extra):
  with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
    out = f.name
  try:
    subprocess.run([binary, "--benchmark_filter=" + flt,
                    "--benchmark_out=" + out, "--benchmark_out_format=json"] +
                   extra, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
      data = json.load(f)
  finally:
    os.unlink(out)
  times = {}
  for b in data["benchmarks"]:
    if b.get("run_type", "iteration") != "iteration":
      continue
    name = b["name"].split("/")[0].removeprefix("BM_")
    times.setdefault(name, []).append(b["real_time"])
  return {k: statistics.median(v) for k, v in times.items()}


def summary(values):
  return "%.3f [%.3f-%.3f]" % (statistics.median(values), min(values),
                               max(values))


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("before")
  p.add_argument("after")
  p.add_argument("--rounds", type=int, default=6)
  p.add_argument("--filter", default=".")
  p.add_argument("--ratio", action="append", default=[],
                 help="NAME=BASE: NAME's time over BASE's, within each run")
  p.add_argument("extra", nargs="*", help="more flags for both binaries")
  a = p.parse_args()
  ratios = [r.split("=", 1) for r in a.ratio]
  b_over_a = {}
  within = {("A", n, base): [] for n, base in ratios}
  within.update({("B", n, base): [] for n, base in ratios})
  for i in range(a.rounds):
    order = [("A", a.before), ("B", a.after)]
    if i % 2:
      order.reverse()
    got = {}
    for label, binary in order:
      got[label] = run(binary, a.filter, a.extra)
    for name in got["A"]:
      if name in got["B"]:
        b_over_a.setdefault(name, []).append(got["B"][name] / got["A"][name])
    for label in ("A", "B"):
      for n, base in ratios:
        if n in got[label] and base in got[label]:
          within[(label, n, base)].append(got[label][n] / got[label][base])
    print("round %d/%d done" % (i + 1, a.rounds), file=sys.stderr)
  print("after / before, same round (median [range] of %d rounds):" % a.rounds)
  for name, v in sorted(b_over_a.items()):
    print("  %-28s %s" % (name, summary(v)))
  for n, base in ratios:
    print("%s / %s within each run: before %s, after %s" %
          (n, base, summary(within[("A", n, base)]) if within[("A", n, base)]
           else "-", summary(within[("B", n, base)]) if within[("B", n, base)]
           else "-"))


if __name__ == "__main__":
  main()
