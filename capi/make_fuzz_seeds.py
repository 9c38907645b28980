#!/usr/bin/env python3
"""Writes the seed corpus of //capi:capi_fuzz into corpus/capi_fuzz/.

Usage: python3 capi/make_fuzz_seeds.py   (from the repository root)

It rewrites its own seeds and keeps every other file: inputs merged by
fuzzing campaigns and corpus/BUILD.bazel (the filegroup the replay
test reads).

Seeds are the 4-byte harness header (see capi/capi_fuzz.cc) followed by
  - each golden descriptor (corpus/golden/descriptors/), under several
    chunkings and modes;
  - each golden descriptor followed by zero-filled buffers of its declared
    sizes (a valid bare stream, and one cut short), and all of them back to
    back;
  - every vector of corpus/descriptors/ (valid ones and one-field-broken
    ones), fed byte by byte;
  - the golden .hrry file in file mode, whole and cut short.
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "corpus", "capi_fuzz")

# (byte 0: mode bits, byte 1: chunking) pairs.
HEADERS = {
    "whole": bytes([0x00, 0x07, 0x00, 0x00]),       # chunks up to 4096
    "bytewise": bytes([0x00, 0x00, 0x00, 0x00]),    # 1 byte at a time
    "empty3": bytes([0x00, 0x0A, 0x5A, 0x01]),      # up to 3, empty chunks
    "lax": bytes([0x03, 0x04, 0x11, 0x00]),         # permissive, no validator
    "cancel": bytes([0x10, 0x06, 0x01, 0x00]),      # callback stops, event 2
}


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    golden = os.path.join(ROOT, "corpus", "golden")
    with open(os.path.join(golden, "manifest.json")) as f:
        manifest = json.load(f)
    streams = b""
    for entry in manifest["descriptors"]:
        base = os.path.splitext(os.path.basename(entry["file"]))[0]
        with open(os.path.join(golden, entry["file"]), "rb") as f:
            desc = f.read()
        for tag, header in HEADERS.items():
            write("golden_%s_%s" % (base, tag), header + desc)
        # Buffers capped at 8 KiB so the seeds stay small.
        sizes = entry["expect"]["buffer_byte_sizes"]
        if sum(sizes) <= 8192:
            tensor = desc + bytes(sum(sizes))
            streams += tensor
            write("stream_%s" % base, HEADERS["empty3"] + tensor)
            if sizes and sum(sizes) > 0:
                write("stream_%s_cut" % base, HEADERS["whole"] + tensor[:-1])
    write("stream_all_whole", HEADERS["whole"] + streams)
    write("stream_all_cancel", HEADERS["cancel"] + streams)
    # File mode (byte 0 bit 5): the golden .hrry, strict and permissive, and
    # cut short.
    for entry in manifest["files"]:
        base = os.path.splitext(os.path.basename(entry["file"]))[0]
        with open(os.path.join(golden, entry["file"]), "rb") as f:
            image = f.read()
        write("file_%s" % base, bytes([0x20, 0, 0, 0]) + image)
        write("file_%s_lax" % base, bytes([0x21, 0, 0, 0]) + image)
        write("file_%s_cut" % base, bytes([0x20, 0, 0, 0]) + image[:-9])
    vectors = os.path.join(ROOT, "corpus", "descriptors")
    for name in sorted(os.listdir(vectors)):
        if not name.endswith(".bin"):
            continue
        with open(os.path.join(vectors, name), "rb") as f:
            write("vector_" + name[:-4], HEADERS["bytewise"] + f.read())


if __name__ == "__main__":
    main()
