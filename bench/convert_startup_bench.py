#!/usr/bin/env python3
"""Start-up cost of `hurray convert` (issue 47 item 3).

Usage: bench/convert_startup_bench.py ROUNDS HURRAY [BASELINE_HURRAY]

Converts a 16-byte safetensors file (no tensors) ROUNDS times with HURRAY
(and BASELINE_HURRAY, another build, when given) against `cp` of the same
file, in alternating rounds (the order reversed every other round), output
in a temporary directory. Prints the median and range of each command's wall
time (fork to exit, measured here), its CPU time (user + system, from
getrusage) and the per-round wall ratios, and the
load average. On so small an input the time is the process's start-up:
loading its shared libraries, their initialisers.
"""
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def main():
    rounds = int(sys.argv[1])
    bins = sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="convert_startup.") as d:
        src = os.path.join(d, "tiny.safetensors")
        header = b"{}      "
        with open(src, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
        cmds = {"cp": ["cp", src, os.path.join(d, "out.cp")]}
        labels = ["after", "before"]
        for label, b in zip(labels, bins):
            cmds[label] = [b, "convert", src, "-o", os.path.join(d, "out.hrry")]
        names = list(cmds)
        times = {k: [] for k in names}
        cpu = {k: [] for k in names}
        print("load average at start:", open("/proc/loadavg").read().split()[:3])
        for r in range(rounds):
            for k in names if r % 2 == 0 else names[::-1]:
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(cmds[k], check=True, stdout=subprocess.DEVNULL)
                times[k].append(time.perf_counter() - t0)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[k].append(r1.ru_utime + r1.ru_stime - r0.ru_utime -
                              r0.ru_stime)
        print("load average at end:", open("/proc/loadavg").read().split()[:3])

    def show(label, values, unit=1e3, fmt="{:.1f}"):
        print(f"{label}: median " + fmt.format(statistics.median(values) * unit) +
              " [" + fmt.format(min(values) * unit) + "-" +
              fmt.format(max(values) * unit) + "]")

    for k in names:
        show(f"{k} wall (ms)", times[k])
        show(f"{k} CPU, user + system (ms)", cpu[k])
    for k in names[1:]:
        show(f"{k} / cp", [a / b for a, b in zip(times[k], times["cp"])], 1,
             "{:.2f}")
    if "before" in times:
        show("after / before", [a / b for a, b in
                                zip(times["after"], times["before"])], 1,
             "{:.3f}")


if __name__ == "__main__":
    main()
