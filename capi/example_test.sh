#!/usr/bin/env bash
# Usage: example_test.sh EXAMPLE README EXAMPLE_C GOLDEN_DESCRIPTOR
# The README's C example is example.c verbatim, and it works: it prints the
# fields of a golden descriptor, and the rule and offset of a broken one.
set -uo pipefail
example="$1"
readme="$2"
source="$3"
golden="$4"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
status=0
# The ```c block of the README.
awk '/^```c$/ {on = 1; next} /^```$/ {on = 0} on' "${readme}" >"${tmp}/readme.c"
if ! diff -u "${source}" "${tmp}/readme.c"; then
  echo "example_test: README's example differs from capi/example.c" >&2
  status=1
fi
out="$("${example}" <"${golden}")"
if [[ "${out}" != "int4, rank 2, 2 buffer(s)" ]]; then
  echo "example_test: golden descriptor gave '${out}'" >&2
  status=1
fi
# The first 30 bytes only: DESC-HDR-01 where the input ran out.
head -c 30 "${golden}" >"${tmp}/short.bin"
out="$("${example}" <"${tmp}/short.bin")"
rc=$?
if [[ ${rc} -ne 1 || "${out}" != "rejected: DESC-HDR-01 at byte 30" ]]; then
  echo "example_test: truncated descriptor gave '${out}' (exit ${rc})" >&2
  status=1
fi
[[ ${status} -eq 0 ]] && echo "example_test: OK"
exit "${status}"
