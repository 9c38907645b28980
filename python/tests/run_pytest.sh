#!/usr/bin/env bash
# Runs the Python suite under `bazel test //python:pytest`: the package from
# this build's runfiles, Debian's interpreter, the user's documents from
# ../shared/seeds beside the checkout (HURRAY_SEEDS overrides).
set -euo pipefail
root="${TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/${TEST_WORKSPACE:-hurray_cpp}"
[[ -d "${root}/python/hurray" ]] || root="$(cd "$(dirname "$0")/../.." && pwd)"
export HURRAY_ROOT="${root}"
export HURRAY_CLI="${root}/tools/hurray"
export PYTHONPATH="${root}/python:${root}/python/tests"
export PYTHONDONTWRITEBYTECODE=1
cd "${TEST_TMPDIR:-/tmp}"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "${root}/python/tests"
