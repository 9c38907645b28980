#!/usr/bin/env bash
# `hurray ingest tcp://...` with --max-open-streams and --max-spool-bytes
# (LIMIT-OPEN-STREAMS, LIMIT-SPOOL-BYTES; docs/network.md § Streams) against
# a server that interleaves its answers message by message: the defaults
# accept them, a limit they exceed refuses them with the rule id (exit 1);
# a bad value is a usage error (exit 2).
#
# Usage: ingest_net_limits_test.sh HURRAY_BINARY INTERLEAVING_SERVE_BINARY
set -uo pipefail
# fail, run, expect_rc, expect_contains; $failures.
source "$(dirname "${BASH_SOURCE[0]}")/testing/cli_checks.sh"

hurray="$(pwd)/$1"
serve="$(pwd)/$2"
work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/ingest_net_limits.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill "${server_pid}" 2>/dev/null; fi
  rm -rf "${work}"
}
trap cleanup EXIT

"${hurray}" pack -o "${work}/m.hrry" --sample >/dev/null || {
  echo "FAIL: pack --sample" >&2
  exit 1
}
# Three keys (at most the client's 4 requests in flight): the server answers
# them on streams 1, 2, 3, interleaved.
keys="layers.0.attn.q_proj.weight,layers.0.mlp.up_proj.weight,norm.weight"
mkfifo "${work}/listening"
"${serve}" "${work}/m.hrry" "${keys}" >"${work}/listening" 2>"${work}/serve.err" &
server_pid=$!
exec 3<"${work}/listening"
if ! read -r -t 20 line <&3 ||
  [[ ! "${line}" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
  echo "FAIL: no 'listening on' line: ${line:-} $(cat "${work}/serve.err")" >&2
  exit 1
fi
url="tcp://127.0.0.1:${BASH_REMATCH[1]}/${keys}"

# The defaults (16 streams, 64 MiB) accept the interleaved answers.
run ingest "${url}" --json
expect_rc 0 "defaults"
expect_contains "${out}" '"valid":true' "defaults"
# So do limits the answers stay within.
run ingest "${url}" --max-open-streams 3 --max-spool-bytes 1048576
expect_rc 0 "limits not reached"

# Stream 2 opens while stream 1 is still open.
run ingest "${url}" --json --max-open-streams 1
expect_rc 1 "--max-open-streams 1"
expect_contains "${out}" '"rule":"LIMIT-OPEN-STREAMS"' "--max-open-streams 1"
# Stream 2's descriptor must be held while stream 1 is delivered.
run ingest "${url}" --json --max-spool-bytes 16
expect_rc 1 "--max-spool-bytes 16"
expect_contains "${out}" '"rule":"LIMIT-SPOOL-BYTES"' "--max-spool-bytes 16"
run ingest "${url}" --max-spool-bytes 16
expect_contains "${out}" "LIMIT-SPOOL-BYTES at byte" "text verdict"

# Usage errors: exit 2, the flag named, nothing connected.
for bad in "--max-open-streams 0" "--max-open-streams 1025" \
  "--max-open-streams x" "--max-open-streams -1" "--max-spool-bytes 0" \
  "--max-spool-bytes 17179869185" "--max-spool-bytes 1e6"; do
  # shellcheck disable=SC2086
  run ingest "${url}" ${bad}
  expect_rc 2 "${bad}"
  expect_contains "${err}" "${bad%% *} needs" "${bad}"
done
run ingest "${url}" --max-spool-bytes
expect_rc 2 "missing value"
expect_contains "${err}" "--max-spool-bytes needs a value" "missing value"
run ingest "${work}/m.hrry" --max-open-streams 4
expect_rc 2 "not tcp://"
expect_contains "${err}" "are for tcp:// sources" "not tcp://"
run ingest --help
expect_contains "${out}${err}" "--max-open-streams N" "help"

if [[ ${failures} -gt 0 ]]; then
  echo "${failures} failure(s)" >&2
  exit 1
fi
echo "PASS"
