#!/usr/bin/env bash
# The libraries `hurray` loads at start-up (issue 47 item 3): Abseil linked
# in from Debian's static archives (third_party/static_link.bzl), so no
# libabsl_*.so among its DT_NEEDED entries; Highway's two dispatch entry
# points defined in the binary (third_party/hwy_lazy.cc), which loads libhwy
# at the first kernel dispatch. In an optimised build nothing else refers
# to libhwy and it is not DT_NEEDED at all; a -c fastbuild binary still
# refers to hwy::Abort (HWY_DASSERT) and loads it at start-up.
set -euo pipefail
hurray="$1"
needed="$(readelf -d "${hurray}" | awk '/\(NEEDED\)/ {print $5}')"
status=0
if grep -q 'libabsl_' <<<"${needed}"; then
  echo "FAIL: hurray loads shared Abseil at start-up:"
  grep 'libabsl_' <<<"${needed}" | head -5
  status=1
fi
undefined="$(nm -D --undefined-only "${hurray}" | c++filt)"
for f in 'hwy::SupportedTargets()' 'hwy::GetChosenTarget()'; do
  if grep -qF "${f}" <<<"${undefined}"; then
    echo "FAIL: ${f} comes from libhwy, not third_party/hwy_lazy.cc"
    status=1
  fi
done
if ! grep -q 'hwy::' <<<"${undefined}" && grep -q 'libhwy' <<<"${needed}"; then
  echo "FAIL: libhwy is DT_NEEDED though nothing of it is referred to"
  status=1
fi
[[ "${status}" -eq 0 ]] && echo "PASS: $(wc -l <<<"${needed}") DT_NEEDED entries"
exit "${status}"
