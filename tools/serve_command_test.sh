#!/usr/bin/env bash
# `hurray serve` end to end: serve a generated .hrry on a free port (--port 0,
# the port parsed from the "listening on" line), fetch tensors and the
# listing with a client, ask for an unknown key, then stop with SIGTERM.
set -euo pipefail

hurray="tools/hurray"
fetch="stream/net/testing/net_fetch"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill "${server_pid}" 2>/dev/null || true; fi
  rm -rf "${work}"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

"${fetch}" gen "${work}/t.hrry"

# Usage and a file that is not .hrry.
"${hurray}" serve --help | grep -q "Usage: hurray serve" || fail "help"
set +e
"${hurray}" serve 2>/dev/null; [[ $? -eq 2 ]] || fail "no file: exit 2"
"${hurray}" serve "${work}/t.hrry" --port 70000 2>/dev/null
[[ $? -eq 2 ]] || fail "bad port: exit 2"
"${hurray}" serve "${work}/t.hrry" --message-timeout 0 2>/dev/null
[[ $? -eq 2 ]] || fail "bad message timeout: exit 2"
"${hurray}" serve "${work}/t.hrry" --max-connections 0 2>/dev/null
[[ $? -eq 2 ]] || fail "bad max connections: exit 2"
head -c 100 /dev/zero > "${work}/bad.hrry"
"${hurray}" serve "${work}/bad.hrry" --port 0 > /dev/null 2> "${work}/bad.err"
[[ $? -eq 1 ]] || fail "invalid file: exit 1"
set -e
grep -q "FILE-" "${work}/bad.err" || fail "invalid file: rule id"

mkfifo "${work}/out"
"${hurray}" serve "${work}/t.hrry" --port 0 --hello-timeout 1 \
  --message-timeout 1 --max-connections 8 --max-connections-per-peer 4 \
  > "${work}/out" 2> "${work}/err" &
server_pid=$!
exec 3< "${work}/out"
read -r -t 20 line <&3 || fail "no 'listening on' line"
[[ "${line}" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "line: ${line}"
port="${BASH_REMATCH[1]}"

"${fetch}" fetch "${port}" dense quant big > "${work}/got"
grep -qx "dense 48" "${work}/got" || fail "dense: $(cat "${work}/got")"
grep -qx "big 65536" "${work}/got" || fail "big: $(cat "${work}/got")"
"${fetch}" fetch "${port}" hurray:list > "${work}/list"
grep -qx "  partition_top" "${work}/list" || fail "listing: $(cat "${work}/list")"
set +e
"${fetch}" fetch "${port}" nope > "${work}/nope"
rc=$?
set -e
[[ ${rc} -eq 1 ]] || fail "unknown key: exit ${rc}"
grep -q "UNKNOWN_TENSOR" "${work}/nope" || fail "unknown key: $(cat "${work}/nope")"

# A silent connection (no CLIENT_HELLO) is closed at the HELLO deadline
# (1 s here), with ERROR, although the idle timeout is 30 s.
exec 4<>"/dev/tcp/127.0.0.1/${port}"
timeout 10 cat <&4 > "${work}/silent" || fail "silent connection not closed"
exec 4<&-
grep -q "CLIENT_HELLO" "${work}/silent" || fail "no ERROR for the silent one"
# More connections than the caps, all silent: a client is still served.
for i in 5 6 7 8 9 10; do eval "exec ${i}<>/dev/tcp/127.0.0.1/${port}"; done
"${fetch}" fetch "${port}" dense > "${work}/got2"
grep -qx "dense 48" "${work}/got2" || fail "full server: $(cat "${work}/got2")"
for i in 5 6 7 8 9 10; do eval "exec ${i}<&-"; done

kill -TERM "${server_pid}"
wait "${server_pid}" || fail "serve did not exit 0 on SIGTERM"
server_pid=""
grep -q "stopped" "${work}/err" || fail "no stop message"
echo "PASS"
