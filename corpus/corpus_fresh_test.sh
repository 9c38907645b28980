#!/usr/bin/env bash
# Usage: corpus_fresh_test.sh CORPUS_GEN
# Fails when the checked-in corpus/descriptors/ differs from what CORPUS_GEN
# writes now (a stale, missing or extra file), or when a decode seed
# corpus/descriptor_decode_fuzz/gen_<name>.bin is not a copy of
# corpus/descriptors/<name>.bin. Fix: corpus/regenerate.sh, then commit.
set -uo pipefail
gen="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}/descriptors"
rm -rf "${out}"
mkdir -p "${out}"
if ! "${gen}" "${out}"; then
  echo "corpus_fresh_test: ${gen} failed" >&2
  exit 1
fi
# Runfiles are symlinks; diff follows them.
if ! diff -r "${out}" corpus/descriptors; then
  echo "corpus_fresh_test: corpus/descriptors/ is stale; run" \
    "corpus/regenerate.sh and commit the result" >&2
  exit 1
fi
status=0
for f in corpus/descriptors/*.bin; do
  seed="corpus/descriptor_decode_fuzz/gen_${f##*/}"
  if ! cmp -s "${f}" "${seed}"; then
    echo "corpus_fresh_test: ${seed} is missing or differs from ${f}" >&2
    status=1
  fi
done
[[ ${status} -eq 0 ]] && echo "corpus_fresh_test: $(ls "${out}" | wc -l) files up to date"
exit "${status}"
