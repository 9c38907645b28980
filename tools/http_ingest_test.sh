#!/usr/bin/env bash
# End-to-end test of `hurray ingest https://...` (issue 15) against real
# servers on loopback: nginx (Debian's, started here with a throw-away
# self-signed certificate, tools/testing/nginx_loopback.sh) and a hostile
# server (tools/testing/hostile_http_server.py).
#
# Usage: http_ingest_test.sh HURRAY INGEST_TESTDATA_GEN HTTP_GET NGINX_LIB
#                            HOSTILE_SERVER
set -uo pipefail
# fail, run, expect_rc, expect_contains; $failures.
source "$(dirname "${BASH_SOURCE[0]}")/testing/cli_checks.sh"

hurray="$(pwd)/$1"
gen="$(pwd)/$2"
http_get="$(pwd)/$3"
source "$(pwd)/$4"
hostile="$(pwd)/$5"
work="${TEST_TMPDIR:-$(mktemp -d)}/http_ingest_test"
rm -rf "${work}"
mkdir -p "${work}/www"
"${gen}" "${work}/www" || {
  echo "FAIL: ingest_testdata_gen exited with $?" >&2
  exit 1
}
cd "${work}" || exit 1

hostile_pid=""
cleanup() {
  nginx_stop
  [[ -n "${hostile_pid}" ]] && kill "${hostile_pid}" 2>/dev/null
  [[ -n "${hostile_pid}" ]] && wait "${hostile_pid}" 2>/dev/null
}
trap cleanup EXIT

# The table without its last (summary) line, which names the source.
table() { printf '%s\n' "$1" | sed '$d'; }
# Every file of a directory with its checksum.
snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

if [[ ! -x "${NGINX_BIN}" ]]; then
  echo "FAIL: ${NGINX_BIN} is missing (tools/install_deps.sh installs nginx)" >&2
  exit 1
fi
nginx_start "${work}" "${work}/www" '
    location /slow/ { alias '"${work}"'/www/; limit_rate 1m; }
    location = /to-mixed { return 302 /mixed.hrry; }
    location = /to-http { return 302 http://127.0.0.1:$server_port/mixed.hrry; }
' || exit 1
ng_https="https://127.0.0.1:${NGINX_HTTPS_PORT}"
ng_http="http://127.0.0.1:${NGINX_HTTP_PORT}"
ca=(--ca-file "${NGINX_CERT}")

# --- Identical outputs to a local ingest. -------------------------------------

run ingest www/mixed.hrry --dequant out_local
expect_rc 0 "local ingest"
local_out="${out}"
for f in mixed.hrry names.hrry mixed.hrs many.hrry; do
  run ingest "${ng_https}/${f}" "${ca[@]}" --dequant "out_https_${f}"
  expect_rc 0 "https ${f}"
  expect_contains "${out}" "${ng_https}/${f}: OK" "https ${f}"
  "${hurray}" ingest "www/${f}" --dequant "out_local_${f}" >"${work}/local_table" 2>/dev/null
  [[ "$(table "${out}")" == "$(table "$(cat "${work}/local_table")")" ]] ||
    fail "https ${f}: the table differs from a local ingest"
  diff -r "out_https_${f}" "out_local_${f}" >/dev/null ||
    fail "https ${f}: the outputs differ from a local ingest"
done
[[ -n "$(ls out_https_mixed.hrry)" ]] || fail "https: no outputs written"

run ingest "${ng_http}/mixed.hrry" --json
expect_rc 0 "http:// when the URL says so"
expect_contains "${out}" '"valid":true' "http:// --json"

run ingest "${ng_https}/to-mixed" "${ca[@]}"
expect_rc 0 "a redirect is followed"
expect_contains "${out}" "/to-mixed: OK (7 tensors, 49537 bytes)" "redirect"

run ingest "${ng_https}/cut.hrry" "${ca[@]}"
expect_rc 1 "a rejected file over https"
expect_contains "${out}" "FILE-TRL-01" "rejected over https: the rule id"

run ingest "${ng_https}/missing.hrry" "${ca[@]}"
expect_rc 2 "HTTP 404"
expect_contains "${err}" "HTTP 404" "HTTP 404"

run ingest "${ng_https}/mixed.hrry"
expect_rc 2 "a self-signed certificate is not trusted by default"
expect_contains "${err}" "not trusted" "no --ca-file"

run ingest "${ng_https}/mixed.hrry" --insecure
expect_rc 0 "--insecure"
expect_contains "${err}" "NOT verified" "--insecure warns"

run ingest "https://localhost:${NGINX_HTTPS_PORT}/mixed.hrry" "${ca[@]}"
expect_rc 0 "the certificate names localhost too"

run ingest "${ng_https}/to-http" "${ca[@]}"
expect_rc 2 "https -> http redirect"
expect_contains "${err}" "from https to http" "https -> http redirect"

run ingest "${ng_https}/mixed.hrry" --header "Host: evil"
expect_rc 2 "--header Host is refused"
run ingest www/mixed.hrry --ca-file x
expect_rc 2 "--ca-file on a file source"

# --- --tensors: only the named tensors' bytes (index first, then ranges). ------

# The bytes nginx sent for requests logged after line $1 (access log lines
# "URI STATUS BODY_BYTES_SENT CONNECTION CONNECTION_REQUESTS").
sent_since() { tail -n +"$(($1 + 1))" "${NGINX_ACCESS_LOG}" | awk '{s += $3} END {print s + 0}'; }
# The rows of a table whose first column is one of the names.
rows_of() { printf '%s\n' "$1" | awk -v n=",$2," 'index(n, "," $1 ",") > 0'; }

names="t3,t4,t30"
run ingest www/many.hrry --dequant out_sel_full
expect_rc 0 "local many.hrry, every tensor"
full_table="${out}"
run ingest www/many.hrry --dequant out_sel_local --tensors "${names}"
expect_rc 0 "--tensors, a local file"
[[ "$(table "${out}")" == "$(printf 'name  shape       type  scheme              bytes  verdict\n%s' "$(rows_of "${full_table}" "${names}")")" ]] ||
  fail "--tensors, local: not the rows of a full ingest: ${out}"
[[ "$(ls out_sel_local | tr '\n' ' ')" == "t3.npy t30.npy t4.npy " ]] ||
  fail "--tensors, local: outputs $(ls out_sel_local | tr '\n' ' ')"
for f in t3 t4 t30; do
  cmp -s "out_sel_local/${f}.npy" "out_sel_full/${f}.npy" ||
    fail "--tensors, local: ${f}.npy differs from a full ingest's"
done

log_before="$(wc -l <"${NGINX_ACCESS_LOG}")"
run ingest "${ng_https}/many.hrry" "${ca[@]}" --dequant out_sel_https --tensors "${names}"
expect_rc 0 "--tensors over https"
[[ "$(table "${out}")" == "$(table "$("${hurray}" ingest www/many.hrry --tensors "${names}" --dequant out_sel_tmp)")" ]] ||
  fail "--tensors over https: the table differs from a local --tensors"
diff -r out_sel_https out_sel_local >/dev/null ||
  fail "--tensors over https: the outputs differ from a local --tensors"
[[ -z "${err}" ]] || fail "--tensors over https: stderr says '${err}'"
sent="$(sent_since "${log_before}")"
size="$(stat -c %s www/many.hrry)"
named="$(rows_of "${out}" "${names}" | awk '{s += $(NF - 3)} END {print s + 0}')"
[[ "${named}" -gt 200000 ]] || fail "--tensors: the named tensors' bytes (${named}) not in the table"
[[ "${sent}" -ge "${named}" ]] ||
  fail "--tensors over https: nginx sent ${sent} bytes, fewer than the ${named} of the named tensors"
[[ "$((sent * 4))" -lt "${size}" ]] ||
  fail "--tensors over https: nginx sent ${sent} of ${size} bytes"
[[ "$(tail -n +"$((log_before + 1))" "${NGINX_ACCESS_LOG}" | awk '$2 != 206' | wc -l)" == 0 ]] ||
  fail "--tensors over https: a request that was not ranged (206)"
echo "--tensors over https: nginx sent ${sent} of ${size} bytes (named: ${named})" >&2
# Kept alive (issue 47): every range request of the run on one connection
# (the access log's 4th field, $connection), the last its Nth request.
ranged="$(tail -n +"$((log_before + 1))" "${NGINX_ACCESS_LOG}")"
[[ "$(printf '%s\n' "${ranged}" | awk '{print $4}' | sort -u | wc -l)" == 1 ]] ||
  fail "--tensors over https: the ranges took more than one connection: ${ranged}"
[[ "$(printf '%s\n' "${ranged}" | wc -l)" -ge 3 &&
  "$(printf '%s\n' "${ranged}" | tail -n 1 | awk '{print $5}')" == "$(printf '%s\n' "${ranged}" | wc -l)" ]] ||
  fail "--tensors over https: not every range request on the kept-alive connection: ${ranged}"

run ingest "${ng_https}/many.hrry" "${ca[@]}" --dequant out_sel_bad --tensors t3,nope
expect_rc 2 "--tensors with a name not in the index"
expect_contains "${err}" "no tensor named 'nope'" "--tensors, unknown name"
[[ ! -e out_sel_bad ]] || fail "--tensors, unknown name: OUT was created"
run ingest www/many.hrry --dequant out_sel_bad --tensors nope
expect_rc 2 "--tensors, a local file, a name not in the index"
[[ ! -e out_sel_bad ]] || fail "--tensors, local unknown name: OUT was created"
run ingest www/mixed.hrs --tensors a
expect_rc 2 "--tensors on a bare stream"
run ingest "${ng_https}/cut.hrry" "${ca[@]}" --tensors norm.weight
expect_rc 1 "--tensors, a file without its trailer"
expect_contains "${out}" "FILE-TRL-01" "--tensors, rejected: the rule id"

# --- --connections N: one object over N range requests (issue 47). -----------

for n in 1 2 8; do
  log_before="$(wc -l <"${NGINX_ACCESS_LOG}")"
  for base in "${ng_https}" "${ng_http}"; do
    rm -rf "out_conn_${n}"
    run ingest "${base}/many.hrry" "${ca[@]}" --connections "${n}" --dequant "out_conn_${n}"
    expect_rc 0 "--connections ${n} (${base})"
    [[ "$(table "${out}")" == "$(table "${full_table}")" ]] ||
      fail "--connections ${n}: the table differs from a local ingest"
    diff -r "out_conn_${n}" out_sel_full >/dev/null ||
      fail "--connections ${n} (${base}): the outputs differ from a local ingest"
  done
  # Connections nginx saw (its $connection, the 4th field): at most N per
  # run (3.0 MB: 3 ranges of 1 MiB), more than one for N > 1.
  conns="$(tail -n +"$((log_before + 1))" "${NGINX_ACCESS_LOG}" | awk '{print $4}' | sort -u | wc -l)"
  [[ "${conns}" -le "$((2 * n))" ]] || fail "--connections ${n}: ${conns} connections for two runs"
  [[ "${n}" == 1 || "${conns}" -gt 2 ]] || fail "--connections ${n}: only ${conns} connections"
done
# --tensors naming every tensor: their ranges merge into reads of 2 MiB
# and more, which go over the connections at once.
all_names="$(printf '%s\n' "${full_table}" | awk 'NR > 1 && NF > 3 {print $1}' | sed '$d' | paste -sd, -)"
log_before="$(wc -l <"${NGINX_ACCESS_LOG}")"
rm -rf out_conn_sel
run ingest "${ng_https}/many.hrry" "${ca[@]}" --connections 4 --tensors "${all_names}" --dequant out_conn_sel
expect_rc 0 "--connections 4 --tensors (every tensor)"
diff -r out_conn_sel out_sel_full >/dev/null ||
  fail "--connections 4 --tensors: the outputs differ from a local ingest"
conns="$(tail -n +"$((log_before + 1))" "${NGINX_ACCESS_LOG}" | awk '{print $4}' | sort -u | wc -l)"
[[ "${conns}" -gt 1 && "${conns}" -le 5 ]] ||
  fail "--connections 4 --tensors: ${conns} connections ($(tail -n +"$((log_before + 1))" "${NGINX_ACCESS_LOG}" | tr '\n' ';'))"
run ingest www/many.hrry --connections 2
expect_rc 2 "--connections on a file"
run ingest "${ng_http}/many.hrry" --connections 33
expect_rc 2 "--connections 33"

# --- Resume: killed half-way, then resumed (206 + If-Range). -------------------

run ingest www/many.hrry --dequant out_many_local
expect_rc 0 "local many.hrry"
local_many="${out}"

slow="${ng_https}/slow/many.hrry"
"${hurray}" ingest "${slow}" "${ca[@]}" --dequant out_r --resume state_r \
  >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 200); do
  [[ -s state_r ]] && grep -q '^record ' state_r 2>/dev/null &&
    [[ "$(grep -c '^record ' state_r)" -ge 5 ]] && break
  sleep 0.05
done
kill -9 "${pid}" 2>/dev/null
wait "${pid}" 2>/dev/null
[[ -s state_r ]] || fail "resume: no state file after the interrupted run"
grep -q '^http ' state_r || fail "resume: the state has no http validator"
done_before="$(grep -c '^record ' state_r)"
[[ "${done_before}" -lt 40 ]] || fail "resume: the first run was not interrupted"
ls -A out_r | grep -q '^\.hurray-.*-lock$' ||
  fail "resume: the killed run left no lock file (nothing to clean up)"
run ingest "${slow}" "${ca[@]}" --dequant out_r --resume state_r
expect_rc 0 "resumed over https"
[[ "$(table "${out}")" == "$(table "${local_many}")" ]] ||
  fail "resumed: the table differs from an uninterrupted run"
diff -r --exclude=".hurray-*" out_r out_many_local >/dev/null ||
  fail "resumed: the outputs differ from an uninterrupted run"
[[ ! -e state_r ]] || fail "resumed: the state file was not removed"
# kill -9 left the hidden temp of the tensor being written (and the run's
# lock file); the resumed run removed them (SafeOutputDir: the temps of a
# run whose lock nobody holds).
leftovers="$(ls -A out_r | grep '^\.hurray-' || true)"
[[ -z "${leftovers}" ]] || fail "resumed: temps of the killed run are left: ${leftovers}"
grep -q '^/slow/many.hrry 206 ' "${NGINX_ACCESS_LOG}" ||
  fail "resumed: no ranged request (206) in nginx's log"

# The same over 3 connections (the first range from the checkpoint, with
# the state's If-Range).
"${hurray}" ingest "${slow}" "${ca[@]}" --dequant out_r3 --resume state_r3 \
  >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 200); do
  [[ -s state_r3 ]] && [[ "$(grep -c '^record ' state_r3)" -ge 5 ]] && break
  sleep 0.05
done
kill -9 "${pid}" 2>/dev/null
wait "${pid}" 2>/dev/null
[[ -s state_r3 ]] || fail "resume, 3 connections: no state file"
run ingest "${slow}" "${ca[@]}" --dequant out_r3 --resume state_r3 --connections 3
expect_rc 0 "resumed over 3 connections"
diff -r --exclude=".hurray-*" out_r3 out_many_local >/dev/null ||
  fail "resumed over 3 connections: the outputs differ from an uninterrupted run"

# --- The object changed between the runs: refused, OUT untouched. -------------

"${hurray}" ingest "${slow}" "${ca[@]}" --dequant out_c --resume state_c \
  >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 200); do
  [[ -s state_c ]] && [[ "$(grep -c '^record ' state_c)" -ge 5 ]] && break
  sleep 0.05
done
kill -9 "${pid}" 2>/dev/null
wait "${pid}" 2>/dev/null
[[ -s state_c ]] || fail "change: no state file after the interrupted run"
cp www/many2.hrry www/many.hrry.new && touch -d '+2 minutes' www/many.hrry.new &&
  mv www/many.hrry.new www/many.hrry
before="$(snapshot out_c)"
state_before="$(sha256sum <state_c)"
run ingest "${slow}" "${ca[@]}" --dequant out_c --resume state_c --connections 4
expect_rc 2 "resume over 4 connections against a changed object"
expect_contains "${err}" "changed on the server" "changed object, 4 connections"
run ingest "${slow}" "${ca[@]}" --dequant out_c --resume state_c
expect_rc 2 "resume against a changed object"
expect_contains "${err}" "changed on the server" "changed object"
[[ "$(snapshot out_c)" == "${before}" ]] || fail "changed object: OUT was touched"
[[ "$(sha256sum <state_c)" == "${state_before}" ]] ||
  fail "changed object: the state file was touched"
cp www/many2.hrry www/many.hrry  # restore nothing else depends on it

# --- The hostile server. -------------------------------------------------------

make_cert "${work}" wrong "DNS:wrong.example" || fail "openssl req (wrong)"
coproc HOSTILE { exec /usr/bin/python3 "${hostile}" www/mixed.hrry \
  "${NGINX_CERT}" "${work}/nginx/server.key" wrong.pem wrong.key; }
hostile_pid="${HOSTILE_PID}"
read -r -t 20 ports <&"${HOSTILE[0]}" || fail "the hostile server did not start"
eval "${ports// /; }"  # http=P https=P wrong=P
h="http://127.0.0.1:${http}"
hs="https://127.0.0.1:${https}"

run ingest "${h}/good"
expect_rc 0 "hostile server, a good answer"

# Over several connections (a second hostile server serving many.hrry, 3
# ranges of 1 MiB): an object that changes between the ranges (If-Range
# answered with 200) and a wrong Content-Range are errors, never bytes.
coproc HOSTILE2 { exec /usr/bin/python3 "${hostile}" www/many.hrry \
  "${NGINX_CERT}" "${work}/nginx/server.key" wrong.pem wrong.key; }
hostile2_pid="${HOSTILE2_PID}"
read -r -t 20 ports2 <&"${HOSTILE2[0]}" || fail "the second hostile server did not start"
h2="http://127.0.0.1:$(printf '%s\n' "${ports2}" | sed 's/.*http=\([0-9]*\).*/\1/')"
run ingest "${h2}/good" --connections 4 --dequant out_h2
expect_rc 0 "hostile server, many.hrry over 4 connections"
"${hurray}" ingest www/many.hrry --dequant out_h2_local >/dev/null 2>&1
diff -r out_h2 out_h2_local >/dev/null || fail "hostile, 4 connections: outputs differ"
run ingest "${h2}/changing" --connections 4 --dequant out_h2c
expect_rc 2 "an object changing between ranges, 4 connections"
expect_contains "${out}" "changed on the server" "changing, 4 connections"
expect_contains "${out}" "STREAM-IO at byte 1048576" "changing, 4 connections: the offset"
run ingest "${h2}/badrange" --connections 4
expect_rc 2 "a wrong Content-Range, 4 connections"
expect_contains "${err}${out}" "Content-Range 'bytes 0-9/" "badrange, 4 connections"
kill "${hostile2_pid}" 2>/dev/null
wait "${hostile2_pid}" 2>/dev/null
run ingest "${hs}/chunked" "${ca[@]}"
expect_rc 0 "a chunked body"
expect_contains "${out}" "OK (7 tensors, 49537 bytes)" "chunked body"
# Read to the Content-Length, not past it: the server adds 4096 bytes and
# keeps the connection open (waiting for more would be an idle timeout,
# reading them a rejection).
"${hurray}" ingest www/mixed.hrry --dequant out_local >/dev/null 2>&1
for url in "${h}/extra" "${hs}/extra"; do
  rm -rf out_extra
  run ingest "${url}" "${ca[@]}" --idle-timeout 2 --dequant out_extra
  expect_rc 0 "bytes past the Content-Length (${url})"
  expect_contains "${out}" "OK (7 tensors, 49537 bytes)" "extra bytes"
  diff -r out_local out_extra >/dev/null ||
    fail "bytes past the Content-Length: outputs differ from a local ingest"
done
run ingest "${hs}/empty" "${ca[@]}"
expect_rc 0 "Content-Length 0"
expect_contains "${out}" "OK (0 tensors, 0 bytes)" "Content-Length 0"

run ingest "${h}/truncated" --dequant out_t
expect_rc 2 "truncated body"
expect_contains "${out}" "STREAM-IO at byte 24768" "truncated: the offset"
expect_contains "${out}" "truncated" "truncated body"
run ingest "${hs}/lying" "${ca[@]}"
expect_rc 2 "Content-Length that lies"
expect_contains "${out}" "STREAM-IO at byte 49537" "lying Content-Length"
expect_contains "${out}" "49537 of 50537" "lying Content-Length"
run ingest "${h}/chunk-cut"
expect_rc 2 "chunked body cut"
expect_contains "${out}" "before the last chunk" "chunked body cut"

run ingest "${hs}/loop" "${ca[@]}"
expect_rc 2 "redirect loop"
expect_contains "${err}" "more than 5 redirects" "redirect loop"
run ingest "${hs}/hop/5" "${ca[@]}"
expect_rc 0 "five redirects are followed"
run ingest "${hs}/hop/6" "${ca[@]}"
expect_rc 2 "six redirects are not"
run ingest "${hs}/downgrade" "${ca[@]}"
expect_rc 2 "https -> http downgrade"
expect_contains "${err}" "from https to http" "downgrade"

run ingest "${h}/drip" --idle-timeout 0.5
expect_rc 2 "one byte a second, idle timeout"
expect_contains "${out}" "idle timeout" "drip"
run ingest "${h}/drip" --idle-timeout 5 --total-timeout 1.5
expect_rc 2 "one byte a second, total timeout"
expect_contains "${out}" "total timeout" "drip, total"
run ingest "${h}/drip-header" --idle-timeout 1
expect_rc 2 "a header one byte a second"
expect_contains "${err}" "idle timeout" "drip-header"
run ingest "${h}/silent" --idle-timeout 0.5
expect_rc 2 "a server that never answers"
expect_contains "${err}" "idle timeout" "silent"

run ingest "https://127.0.0.1:${wrong}/good" "${ca[@]}" --ca-file wrong.pem
expect_rc 2 "certificate for the wrong host"
expect_contains "${err}" "not trusted" "wrong host"
run ingest "${h}/gzip"
expect_rc 2 "gzip body"
expect_contains "${err}" "Content-Encoding" "gzip body"
run ingest "${h}/big-header"
expect_rc 2 "enormous header"
expect_contains "${err}" "larger than 65536" "enormous header"
[[ -z "$(ls -A out_t 2>/dev/null)" ]] || fail "truncated: outputs left behind"

# --tensors without range support (200 to a range request): one forward
# pass, said on stderr, the same outputs.
"${hurray}" ingest www/mixed.hrry --dequant out_nr_full >/dev/null 2>&1
run ingest "${h}/norange" --dequant out_nr --tensors norm.weight,counts
expect_rc 0 "--tensors without range support"
expect_contains "${err}" "does not serve byte ranges" "--tensors fallback"
[[ "$(ls out_nr | tr '\n' ' ')" == "counts.npy norm.weight.npy " ]] ||
  fail "--tensors fallback: outputs $(ls -A out_nr | tr '\n' ' ')"
for f in counts norm.weight; do
  cmp -s "out_nr/${f}.npy" "out_nr_full/${f}.npy" ||
    fail "--tensors fallback: ${f}.npy differs from a full ingest's"
done
run ingest "${h}/norange" --dequant out_nr_bad --tensors counts,nope
expect_rc 2 "--tensors fallback, a name not in the index"
expect_contains "${err}" "no tensor named 'nope'" "--tensors fallback, unknown name"
[[ -z "$(ls -A out_nr_bad 2>/dev/null)" ]] ||
  fail "--tensors fallback, unknown name: outputs left: $(ls -A out_nr_bad)"
# The object changes between the ranges (a new ETag, so If-Range gets the
# whole object): refused, nothing written.
run ingest "${h}/changing" --dequant out_ch --tensors counts
expect_rc 2 "--tensors, the object changes between two ranges"
expect_contains "${err}" "changed on the server" "--tensors, changing object"
[[ -z "$(ls -A out_ch 2>/dev/null)" ]] || fail "--tensors, changing object: outputs left"
run ingest "${h}/truncated" --dequant out_nr_t --tensors counts
expect_rc 2 "--tensors fallback, truncated body"
expect_contains "${out}" "STREAM-IO" "--tensors fallback, truncated"

# HttpBody directly: a 206 with the wrong Content-Range, a server without
# range support, the Authorization header across hosts.
"${http_get}" "${h}/badrange" --range 100 >/dev/null 2>"${work}/get_err"
rc=$?
[[ "${rc}" == 1 ]] || fail "206 with a wrong Content-Range: exit ${rc}"
expect_contains "$(cat "${work}/get_err")" "Content-Range" "wrong Content-Range"
"${http_get}" "${h}/norange" --range 100 >/dev/null 2>"${work}/get_err"
expect_contains "$(cat "${work}/get_err")" "status 200" "200 to a range request"
"${http_get}" "${ng_https}/mixed.hrry" --ca-file "${NGINX_CERT}" --range 49000 \
  >"${work}/tail" 2>"${work}/get_err" || fail "range request: $(cat "${work}/get_err")"
cmp -s "${work}/tail" <(tail -c +49001 www/mixed.hrry) || fail "range request: wrong bytes"
auth=(--header "Authorization: Bearer secret")
[[ "$("${http_get}" "${h}/auth" "${auth[@]}")" == "auth:yes" ]] ||
  fail "Authorization is sent to the origin"
[[ "$("${http_get}" "${h}/other-host" "${auth[@]}")" == "auth:no" ]] ||
  fail "Authorization is dropped across hosts"

if [[ "${failures}" -ne 0 ]]; then
  echo "${failures} failure(s)" >&2
  exit 1
fi
echo "PASS"
