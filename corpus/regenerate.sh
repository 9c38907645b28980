#!/usr/bin/env bash
# Regenerates the generated parts of corpus/:
#   corpus/descriptors/              //tools/testing:corpus_gen output (checked by
#                                    //corpus:corpus_fresh_test)
#   corpus/descriptor_decode_fuzz/   golden_*.bin, gen_*.bin: the golden and
#                                    generated descriptors as they are
#   corpus/descriptor_chunked_fuzz/  golden_*.bin, gen_*.bin, stream_*.bin:
#                                    the same behind a 4-byte harness header
#                                    (see fuzz/descriptor_chunked_fuzz.cc),
#                                    plus a few streams of several descriptors
# Seeds with other names (regression_* inputs, files merged in by
# fuzz/campaign.sh) are left alone. Run from anywhere; then commit corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."

bazel build //tools/testing:corpus_gen
gen="$(bazel info bazel-bin)/tools/testing/corpus_gen"
"${gen}" --check

rm -f corpus/descriptors/*.bin corpus/descriptors/MANIFEST.tsv
"${gen}" corpus/descriptors

decode=corpus/descriptor_decode_fuzz
chunked=corpus/descriptor_chunked_fuzz
mkdir -p "${decode}" "${chunked}"
rm -f "${decode}"/golden_*.bin "${decode}"/gen_*.bin
rm -f "${chunked}"/golden_*.bin "${chunked}"/gen_*.bin "${chunked}"/stream_*.bin

# Chunked-target headers, used in turn: options byte, chunking byte, seed.
headers=(
  '\x00\x00\x00\x00' # strict, byte by byte
  '\x01\x25\x13\x37' # permissive, chunks of 1..16
  '\x00\x1b\x42\x00' # strict, chunks of 0..5
  '\x02\x12\x00\x01' # strict, no validation, chunks of 1..3
  '\x04\x07\x00\x00' # default options (no agreements), chunks up to 4096
  '\x08\x31\x99\x01' # tight limits, chunks of 1..2
  '\x03\x0e\x55\x00' # permissive, no validation, chunks of 0..64
  '\x00\x44\xaa\xbb' # strict, chunks of 1..8
)

i=0
seed() {  # seed SOURCE NAME
  cp "$1" "${decode}/$2"
  { printf "${headers[$((i % ${#headers[@]}))]}"; cat "$1"; } >"${chunked}/$2"
  i=$((i + 1))
}
for f in corpus/golden/descriptors/*.bin; do seed "${f}" "golden_${f##*/}"; done
for f in corpus/descriptors/*.bin; do seed "${f}" "gen_${f##*/}"; done

d=corpus/descriptors
g=corpus/golden/descriptors
stream() {  # stream NAME HEADER FILE...
  local name="$1" header="$2"
  shift 2
  { printf "${header}"; cat "$@"; } >"${chunked}/stream_${name}.bin"
}
stream valid3 '\x00\x2d\x01\x00' \
  "${d}/dense_f32_3x4.bin" "${d}/per_channel_asym_int8.bin" "${d}/everything.bin"
stream layouts '\x01\x23\x45\x00' \
  "${g}/csr_f32_3x3.bin" "${g}/strided_f32_3x4.bin" \
  "${d}/layout_tiled_2level_f32_8x8.bin" "${d}/layout_block_paged_f16_16x2x8.bin"
stream after_rejection '\x00\x3c\x10\x20' \
  "${d}/broken_pca_zp_size.bin" "${d}/dense_f32_3x4.bin"
stream tail_truncated '\x00\x2a\x00\x00' \
  "${d}/statistics_f32_16.bin" "${d}/broken_truncated_half_everything.bin"

# corpus/fast_path_fuzz/ (fuzz/fast_path_fuzz.cc): the same descriptors
# behind a 2-byte header (options, split point), headers used in turn, and
# each of the 36 valid vectors in mutation mode, unedited.
fast=corpus/fast_path_fuzz
mkdir -p "${fast}"
rm -f "${fast}"/golden_*.bin "${fast}"/gen_*.bin "${fast}"/mut_*.bin
fast_headers=(
  '\x00\x00' # strict, whole
  '\x01\x00' # permissive, whole
  '\x00\x1d' # strict, split
  '\x02\x00' # strict, no validation
  '\x04\x00' # default options
  '\x08\x07' # tight limits, split
  '\x20\x00' # strict, column-major disabled
)
i=0
fast_seed() {  # fast_seed SOURCE NAME
  { printf "${fast_headers[$((i % ${#fast_headers[@]}))]}"; cat "$1"; } \
    >"${fast}/$2"
  i=$((i + 1))
}
for f in corpus/golden/descriptors/*.bin; do fast_seed "${f}" "golden_${f##*/}"; done
for f in corpus/descriptors/*.bin; do fast_seed "${f}" "gen_${f##*/}"; done
for v in $(seq 0 35); do
  printf '\x10\x00'"$(printf '\\x%02x' "${v}")" >"${fast}/mut_$(printf %02d "${v}").bin"
done

echo "corpus: $(ls corpus/descriptors | wc -l) files in corpus/descriptors," \
  "$(ls "${decode}" | wc -l) decode seeds, $(ls "${chunked}" | wc -l) chunked seeds"
