#!/usr/bin/env bash
# Usage: exported_symbols_test.sh LIBHURRAY_SO HURRAY_H
# The dynamic symbols libhurray.so defines are exactly the functions hurray.h
# declares (each under the version node HURRAY_1): nothing of the C++ core,
# Abseil or the C++ runtime leaks out, and nothing declared is missing.
set -euo pipefail
lib="$1"
header="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
# Defined dynamic symbols, minus the version node itself (an absolute symbol).
nm -D --defined-only "${lib}" | awk '$2 != "A" {print $3}' | sort >"${tmp}/exported"
# Declared functions: the name before the "(" of each HURRAY_API declaration
# (declarations may wrap, so the header is read as one line).
tr '\n' ' ' <"${header}" | grep -oE 'HURRAY_API [^;(]*\(' |
  grep -oE 'hurray_[a-z0-9_]+ *\($' | tr -d '( ' | sed 's/$/@@HURRAY_1/' |
  sort >"${tmp}/declared"
if ! diff -u "${tmp}/declared" "${tmp}/exported"; then
  echo "exported_symbols_test: libhurray.so exports differ from hurray.h" >&2
  exit 1
fi
echo "exported_symbols_test: $(wc -l <"${tmp}/exported") symbols, all hurray_*@@HURRAY_1"
