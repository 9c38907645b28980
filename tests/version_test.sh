#!/usr/bin/env bash
# One version, from one place: `hurray --version`, hurray_version_string() of
# libhurray.so and Python's hurray.__version__ all say what version.bzl says.
#
# Usage: version_test.sh VERSION_BZL HURRAY LIBHURRAY_SO PYTHON_PACKAGE_MARKER
# (runfiles paths, as `bazel test` passes them).
set -uo pipefail
want="$(sed -n 's/^HURRAY_VERSION = "\(.*\)"$/\1/p' "$1")"
hurray="$(pwd)/$2"
lib="$(pwd)/$3"
pydir="$(pwd)/$(dirname "$(dirname "$4")")"
failures=0
check() {  # check WHAT GOT
  if [[ "$2" != "$3" ]]; then
    echo "FAIL: $1 says '$2', version.bzl says '$3'" >&2
    failures=$((failures + 1))
  fi
}

[[ "${want}" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  { echo "FAIL: version.bzl's HURRAY_VERSION is not MAJOR.MINOR.PATCH: '${want}'" >&2; exit 1; }
check "hurray --version" "$("${hurray}" --version)" "hurray ${want}"
check "hurray version" "$("${hurray}" version)" "hurray ${want}"
check "hurray --help (first line)" \
  "$("${hurray}" --help | head -1 | cut -d: -f1)" "hurray ${want}"
check "hurray_version_string()" "$(/usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.hurray_version_string.restype = ctypes.c_char_p
print(lib.hurray_version_string().decode())' "${lib}")" "${want}"
check "hurray.__version__" "$(cd "${TEST_TMPDIR:-/tmp}" &&
  PYTHONPATH="${pydir}" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import hurray; print(hurray.__version__)')" "${want}"

[[ ${failures} -eq 0 ]] || exit 1
echo "PASS: every version is ${want}"
