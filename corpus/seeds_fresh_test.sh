#!/usr/bin/env bash
# Usage: seeds_fresh_test.sh seed_gen SEED_GEN | net NET_FUZZ_SEED_GEN
# Fails when a generated seed in corpus/ is stale, missing or left over:
# runs the generator into a scratch copy of what it reads, compares every
# file it writes with the committed one, and looks for committed seeds of
# its naming that it no longer writes. Seeds merged by campaigns (SHA-1
# names) and regression_* inputs are not the generator's and are left out.
#   seed_gen  //fuzz:seed_gen writes CORPUS_ROOT/<target>/seed_*.bin from
#             corpus/descriptors/ and corpus/golden/files/basic.hrry
#   net       //stream/net/testing:net_fuzz_seed_gen writes the named seeds
#             of corpus/net_session_fuzz/
# Fix: rerun the generator into corpus/ (see its usage line) and commit.
set -uo pipefail
kind="$1"
gen="$2"
scratch="${TEST_TMPDIR:-$(mktemp -d)}/seeds"
rm -rf "${scratch}"
mkdir -p "${scratch}"
case "${kind}" in
  seed_gen)
    mkdir -p "${scratch}/golden/files"
    if ! cp -rL corpus/descriptors "${scratch}/descriptors" ||
      ! cp -L corpus/golden/files/basic.hrry "${scratch}/golden/files/" ||
      [[ -z "$(ls "${scratch}/descriptors")" ]]; then
      echo "seeds_fresh_test: cannot copy the generator's inputs" >&2
      exit 1
    fi
    for d in corpus/*_fuzz; do mkdir -p "${scratch}/${d#corpus/}"; done
    "${gen}" "${scratch}" >/dev/null || { echo "${gen} failed" >&2; exit 1; }
    # The generator's own files in corpus/: seed_*.bin of the folders it
    # wrote to.
    generated() {
      local d
      for d in "${scratch}"/*_fuzz; do
        [[ -n "$(ls "${d}")" ]] || continue
        ls corpus/"${d##*/}"/seed_*.bin 2>/dev/null
      done
    }
    ;;
  net)
    mkdir -p "${scratch}/net_session_fuzz"
    "${gen}" "${scratch}/net_session_fuzz" >/dev/null ||
      { echo "${gen} failed" >&2; exit 1; }
    # Its seeds have names, the campaigns' merged inputs are SHA-1 sums.
    generated() {
      ls corpus/net_session_fuzz | grep -vE '^([0-9a-f]{40}|regression_.*)$' |
        sed 's|^|corpus/net_session_fuzz/|'
    }
    ;;
  *)
    echo "usage: $0 seed_gen|net GENERATOR" >&2
    exit 2
    ;;
esac
status=0
count=0
while IFS= read -r -d '' f; do
  rel="${f#"${scratch}"/}"
  case "${rel}" in descriptors/* | golden/*) continue ;; esac
  count=$((count + 1))
  if ! cmp -s "${f}" "corpus/${rel}"; then
    echo "seeds_fresh_test: corpus/${rel} is missing or stale" >&2
    status=1
  fi
done < <(find "${scratch}" -type f -print0)
# A committed seed the generator no longer writes.
while IFS= read -r f; do
  if [[ ! -f "${scratch}/${f#corpus/}" ]]; then
    echo "seeds_fresh_test: ${f} is not written by the generator any more" >&2
    status=1
  fi
done < <(generated)
if [[ ${count} -eq 0 ]]; then
  echo "seeds_fresh_test: the generator wrote nothing" >&2
  exit 1
fi
[[ ${status} -eq 0 ]] && echo "seeds_fresh_test: ${count} seeds up to date"
exit "${status}"
