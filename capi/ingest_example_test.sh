#!/usr/bin/env bash
# capi/examples/ingest.c against libhurray.so: a .hrry file, a bare stream
# and a `hurray serve` peer, callback and pull forms, each line checked
# against the float32 outputs of `hurray ingest --dequant --format f32`
# (sums recomputed in Python, in the same order, in a double); a truncated
# file is rejected with its rule id and offset.
#
# Usage: ingest_example_test.sh INGEST_EXAMPLE HURRAY INGEST_TESTDATA_GEN
set -uo pipefail

example="$1"
hurray="$2"
gen="$3"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill "${server_pid}" 2>/dev/null; fi
  rm -rf "${work}"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

"${gen}" "${work}" || { echo "FAIL: test data" >&2; exit 1; }

# expected SOURCE: the lines the example must print, from the CLI's f32
# outputs.
expected() {
  rm -rf "${work}/out"
  "${hurray}" ingest "$1" --dequant "${work}/out" --format f32 \
    --dtype float32 --json > "${work}/report.json" || return 1
  python3 - "${work}/report.json" "${work}/out" <<'PY'
import array, json, math, sys
report = json.load(open(sys.argv[1]))
for t in report["tensors"]:
    name = t.get("name") or "tensor_%d" % t["index"]
    values = array.array("f")
    if "output" in t:
        with open(sys.argv[2] + "/" + t["output"], "rb") as f:
            values.frombytes(f.read())
    total = 0.0
    for v in values:
        total += v
    text = "%.9g" % total
    if math.isnan(total):  # printf's spelling: the sign bit shows
        text = "-nan" if math.copysign(1.0, total) < 0 else "nan"
    print("%s\t%d\t%s" % (name, len(values), text))
PY
}

for src in mixed.hrry mixed.hrs; do
  expected "${work}/${src}" > "${work}/want" || fail "${src}: hurray ingest"
  [[ -s "${work}/want" ]] || fail "${src}: no expected lines"
  for form in "" --pull; do
    "${example}" "${work}/${src}" ${form} > "${work}/got" 2> "${work}/err"
    rc=$?
    [[ ${rc} -eq 0 ]] || fail "${src} ${form}: exit ${rc}: $(cat "${work}/err")"
    diff "${work}/want" "${work}/got" > /dev/null ||
      fail "${src} ${form}: lines differ:
$(diff "${work}/want" "${work}/got")"
  done
done

# A truncated file: rejected, with the rule id and the offset.
"${example}" "${work}/cut.hrry" > /dev/null 2> "${work}/err"
rc=$?
[[ ${rc} -eq 1 ]] || fail "cut.hrry: exit ${rc}, want 1: $(cat "${work}/err")"
grep -q "REJECTED: [A-Z0-9-]* at byte [0-9]*:" "${work}/err" ||
  fail "cut.hrry: no rule id and offset: $(cat "${work}/err")"
"${example}" "${work}/missing.hrry" > /dev/null 2> "${work}/err"
rc=$?
[[ ${rc} -eq 2 ]] || fail "missing file: exit ${rc}, want 2"
grep -q "IO_ERROR: cannot open: No such file" "${work}/err" ||
  fail "missing file: $(cat "${work}/err")"

# Against `hurray serve`: the same tensors, by name.
expected "${work}/mixed.hrry" | sort > "${work}/want"
mkfifo "${work}/serve_out"
"${hurray}" serve "${work}/mixed.hrry" --port 0 > "${work}/serve_out" \
  2> "${work}/serve_err" &
server_pid=$!
exec 3< "${work}/serve_out"
if read -r -t 20 line <&3 &&
    [[ "${line}" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
  port="${BASH_REMATCH[1]}"
  for form in "" --pull; do
    "${example}" "tcp://127.0.0.1:${port}" ${form} > "${work}/got" \
      2> "${work}/err"
    rc=$?
    [[ ${rc} -eq 0 ]] || fail "serve ${form}: exit ${rc}: $(cat "${work}/err")"
    sort "${work}/got" | diff "${work}/want" - > /dev/null ||
      fail "serve ${form}: lines differ:
$(sort "${work}/got" | diff "${work}/want" -)"
  done
else
  fail "hurray serve did not start: $(cat "${work}/serve_err")"
fi

if [[ "${failures}" -gt 0 ]]; then
  echo "${failures} failure(s)" >&2
  exit 1
fi
echo "PASS"
