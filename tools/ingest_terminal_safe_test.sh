#!/usr/bin/env bash
# `hurray ingest` prints nothing raw that came from the user or a peer
# (issue 46 item 12): every source, name, key and peer message goes through
# TerminalSafe (tools/display_text.h). Runs the CLI over sources, tensor
# names and URLs holding control bytes and ESC sequences, and over a peer
# that answers with them, and scans stdout and stderr of every run for raw
# C0 controls (but newline), DEL and C1 controls.
#
# Usage: ingest_terminal_safe_test.sh HURRAY INGEST_TESTDATA_GEN NET_FETCH
set -uo pipefail

hurray="$1"
gen="$2"
fetch="$3"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill "${server_pid}" 2>/dev/null; fi
  rm -rf "${work}"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/testing/cli_checks.sh"

"${gen}" "${work}" || { echo "FAIL: generating test data" >&2; exit 1; }

esc=$'\x1b'
bel=$'\x07'
cr=$'\r'
evil="${esc}[31mred${esc}]0;title${bel}${cr}"

# scan CONTEXT ARGS...: runs `hurray ingest ARGS...` and fails when its
# output holds a raw control byte.
checked=0
scan() {
  local context="$1"
  shift
  "${hurray}" ingest "$@" > "${work}/o" 2> "${work}/e" < /dev/null
  checked=$((checked + 1))
  # C0 controls but \n, DEL, and the C1 controls (U+0080..U+009F in UTF-8).
  if LC_ALL=C grep -aqP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' \
      "${work}/o" "${work}/e"; then
    fail "${context}: raw control bytes in the output:
$(cat -v "${work}/o" "${work}/e")"
  fi
}

# Sources with control bytes in their names: valid, rejected, missing.
cp "${work}/mixed.hrry" "${work}/${evil}.hrry"
cp "${work}/cut.hrry" "${work}/${evil}cut.hrry"
cp "${work}/mixed.hrs" "${work}/${evil}.hrs"
scan "valid file" "${work}/${evil}.hrry"
scan "valid file, --json" "${work}/${evil}.hrry" --json
scan "rejected file" "${work}/${evil}cut.hrry"
scan "missing file" "${work}/${evil}missing.hrry"
scan "stream file" "${work}/${evil}.hrs" --dequant "${work}/out1"
scan "--tensors, unknown name" "${work}/mixed.hrry" --tensors "${evil}"
scan "--tensors, stream" "${work}/${evil}.hrs" --tensors a
scan "--resume" "${work}/${evil}.hrry" --resume "${work}/${evil}state" \
  --dequant "${work}/${evil}out"
scan "unwritable --dequant" "${work}/mixed.hrry" \
  --dequant "/proc/${evil}/out"
# Tensor names with ESC, newline and NUL (names.hrry).
scan "hostile names" "${work}/names.hrry"
scan "hostile names, --dequant" "${work}/names.hrry" --dequant "${work}/out2"
scan "hostile names, --tensors" "${work}/names.hrry" \
  --tensors "${esc}[31mred${esc}[0m"
# URLs.
scan "tcp:// without a port" "tcp://${evil}"
scan "tcp:// refused" "tcp://127.0.0.1:1/${evil}" --connect-timeout 2
scan "https:// bad URL" "https://${evil}/x"
scan "http:// refused" "http://127.0.0.1:1/${evil}" --connect-timeout 2
scan "bad option" "${work}/mixed.hrry" "--${evil}"
scan "bad --header" "https://127.0.0.1:1/x" --header "${evil}"

# A peer's messages: `hurray serve` answers an unknown key (named with ESC
# and BEL) with ERROR UNKNOWN_TENSOR quoting it.
"${fetch}" gen "${work}/t.hrry"
mkfifo "${work}/serve_out"
"${hurray}" serve "${work}/t.hrry" --port 0 > "${work}/serve_out" \
  2> /dev/null &
server_pid=$!
exec 3< "${work}/serve_out"
if read -r -t 20 line <&3 &&
    [[ "${line}" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
  port="${BASH_REMATCH[1]}"
  scan "peer error" "tcp://127.0.0.1:${port}/${evil}"
  scan "peer error, --tensors" "tcp://127.0.0.1:${port}" --tensors "${evil}"
  scan "peer, valid" "tcp://127.0.0.1:${port}/dense"
else
  fail "hurray serve did not start"
fi

if [[ "${failures}" -gt 0 ]]; then
  echo "${failures} failure(s) of ${checked} runs" >&2
  exit 1
fi
echo "PASS (${checked} runs)"
