"""No leak over many open/close cycles (tracemalloc and RSS)."""

import gc
import resource
import tracemalloc

import numpy

import hurray


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def test_no_leak_over_10000_cycles(tmp_path):
    path = tmp_path / "m.hrry"
    x = numpy.random.default_rng(2).standard_normal((16, 64)).astype("f4")
    hurray.save(path, {"w": hurray.quantize(x, "nf4", axis=1, block_size=64)})
    stream = hurray.StreamWriter()
    stream.write(hurray.from_numpy(x))
    wire = stream.getvalue()

    def cycle():
        with hurray.open(path) as f:
            f["w"].dequantize()
        list(hurray.StreamReader(wire))
        d = hurray.Decoder()
        d.feed(wire)

    for _ in range(500):  # warm caches and allocator pools
        cycle()
    gc.collect()
    tracemalloc.start()
    rss0 = _rss_kib()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(10000):
        cycle()
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    rss1 = _rss_kib()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 256 * 1024, grown
    assert rss1 - rss0 < 16 * 1024, (rss0, rss1)
