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
# The vectors MANIFEST.tsv expects strict mode to accept; the extension ones
# use private values agreed with their producer.
valid=()
while IFS=$'\t' read -r file strict _; do
  [[ "${strict}" == accept ]] && valid+=("corpus/descriptors/${file}")
done < corpus/descriptors/MANIFEST.tsv
"${hurray}" validate --agree type=0xF3 --agree layout-id=0x5EED "${valid[@]}"
echo
echo "== hurray validate (a few of our broken vectors: rule id and byte offset)"
"${hurray}" validate corpus/descriptors/broken_alignment_48.bin \
  corpus/descriptors/broken_coo_reserved.bin \
  corpus/descriptors/broken_csf_mode_order_repeated.bin || true
echo
echo "== hurray inspect --json (one line per file)"
"${hurray}" inspect --json corpus/golden/descriptors/quant_per_block_int4_128x128.bin
