"""The release version of hurray-cpp: the one place it is written.

The CLI (`hurray --version`), hurray_version_string(), hurray.__version__,
the wheel, hurray.pc and the CMake package all take it from here
(docs/versioning.md; //tests:version_test checks that they agree).
"""

HURRAY_VERSION = "0.9.0"

def _check(version):
    parts = version.split(".")
    if len(parts) != 3 or not all([p.isdigit() for p in parts]):
        fail("HURRAY_VERSION is not MAJOR.MINOR.PATCH: " + version)
    return version

VERSION = _check(HURRAY_VERSION)
