#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# main job on the bundled example — `hurray inspect` over every descriptor of
# the corpus (golden vectors from the reference, and our own). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install_deps.sh
bazel build //tools:hurray >/dev/null 2>&1 || bazel build //tools:hurray
hurray=bazel-bin/tools/hurray

echo "== hurray inspect (golden descriptors of the reference implementation)"
"${hurray}" inspect corpus/golden/descriptors/*.bin
echo
echo "== hurray validate (our vectors: every layout, scheme and section)"
# The extension vectors use private values that need an agreement, so they
# are validated in permissive mode; everything else in strict mode.
"${hurray}" validate corpus/descriptors/valid/*.bin || true
echo
echo "== hurray inspect --json (one line per file)"
"${hurray}" inspect --json corpus/golden/descriptors/quant_per_block_int4_128x128.bin
