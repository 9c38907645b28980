"""Writes the hurray wheel (PEP 427) from files Bazel built.

Usage: make_wheel.py OUT.whl VERSION ARCNAME=PATH...

No setuptools and no rules_python: the wheel is a zip of the package, its
*.dist-info/METADATA, WHEEL and RECORD (with each file's SHA-256). It is for
Debian 12's CPython 3.11 on x86_64 and says no more: tag cp311-cp311-linux_x86_64
(no manylinux tag: the extension links Debian's shared Abseil and Highway).
Entries are written in sorted order with a fixed date, so the same inputs
give the same bytes.
"""

import base64
import hashlib
import sys
import zipfile

TAG = "cp311-cp311-linux_x86_64"
DATE = (2020, 1, 1, 0, 0, 0)


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def main(argv):
    out, version, pairs = argv[1], argv[2], argv[3:]
    info = f"hurray-{version}.dist-info"
    files = {}
    for pair in pairs:
        arcname, path = pair.split("=", 1)
        with open(path, "rb") as f:
            files[arcname] = f.read()
    files[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        "Name: hurray\n"
        f"Version: {version}\n"
        "Summary: Fuzz-hardened reader of the Hurray tensor format "
        "(hurray-cpp's Python module)\n"
        "Requires-Python: ==3.11.*\n"
        "Requires-Dist: numpy\n").encode()
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        "Generator: hurray-cpp python/make_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {TAG}\n").encode()
    files[f"{info}/top_level.txt"] = b"hurray\n"
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n"
                     for name, data in sorted(files.items()))
    record += f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as whl:
        # dist-info last, as PEP 427 recommends.
        for name in sorted(files, key=lambda n: (n.startswith(info), n)):
            entry = zipfile.ZipInfo(name, DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            mode = 0o755 if name.endswith(".so") else 0o644
            entry.external_attr = (0o100000 | mode) << 16
            whl.writestr(entry, files[name])


if __name__ == "__main__":
    main(sys.argv)
