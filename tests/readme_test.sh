#!/usr/bin/env bash
# Runs the README's three examples as written: the blocks after the markers
# `<!-- readme-test: cli|python|c -->`, in a temporary folder laid out like a
# checkout after its builds (bazel-bin/tools/hurray, bazel-bin/python,
# capi/hurray.h, bazel-bin/capi/libhurray.so). Lines that start a Bazel build
# are left out: this test's data are those builds.
#
# Usage: readme_test.sh README.md HURRAY LIBHURRAY_SO HURRAY_H PY_MARKER
set -uo pipefail
here="$(pwd)"
readme="${here}/$1"
work="${TEST_TMPDIR:-$(mktemp -d)}/readme"
rm -rf "${work}" && mkdir -p "${work}/bazel-bin/tools" "${work}/bazel-bin/capi" \
  "${work}/capi"
ln -s "${here}/$2" "${work}/bazel-bin/tools/hurray"
ln -s "${here}/$3" "${work}/bazel-bin/capi/libhurray.so"
ln -s "${here}/$4" "${work}/capi/hurray.h"
ln -s "${here}/$(dirname "$(dirname "$5")")" "${work}/bazel-bin/python"
cd "${work}" || exit 1
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# block NAME: the fenced block after the marker of NAME.
block() {
  awk -v m="<!-- readme-test: $1 -->" '
    $0 == m { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "${readme}"
}

cli="$(block cli)"
python="$(block python)"
c="$(block c)"
[[ -n "${cli}" && -n "${python}" && -n "${c}" ]] ||
  { echo "FAIL: a README example is missing (cli, python, c)" >&2; exit 1; }

echo "== cli"
out="$(printf '%s\n' "${cli}" | sed 's/^bazel build [^&]*&& //' | bash -e 2>&1)" ||
  fail "the CLI example exited $?: ${out}"
printf '%s\n' "${out}"
grep -q "^sample.hrry: OK (7 tensors)$" <<<"${out}" || fail "cli: no 'sample.hrry: OK (7 tensors)'"
[[ $(find out -name '*.npy' | wc -l) -eq 7 ]] ||
  fail "cli: out/ holds $(find out -name '*.npy' 2>/dev/null | wc -l) .npy files, not 7"

echo "== python"
out="$(printf '%s\n' "${python}" | PYTHONPATH="${work}/bazel-bin/python" \
  PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - 2>&1)" ||
  fail "the Python example exited $?: ${out}"
printf '%s\n' "${out}"
grep -Eq "^w \(256, 256\) 0\.0$" <<<"${out}" ||
  fail "python: ingest did not give back the values load() gave"

echo "== c"
printf '%s\n' "${c}" >first.c
build="$(grep -Eo 'cc first\.c .* -o first' first.c)"
[[ -n "${build}" ]] || fail "c: the block does not say how to build it"
eval "${build}" || fail "c: '${build}' failed"
out="$(./first sample.hrry 2>&1)" || fail "c: ./first exited $?: ${out}"
printf '%s\n' "${out}"
[[ $(grep -c "values dequantized" <<<"${out}") -eq 6 ]] ||
  fail "c: not 6 quantized tensors dequantized"
grep -q "^norm.weight: float32$" <<<"${out}" || fail "c: norm.weight missing"
bad="$(./first /nonexistent 2>&1)" && fail "c: a missing file exited 0"

[[ ${failures} -eq 0 ]] || exit 1
echo "PASS: the README's three examples run as written"
