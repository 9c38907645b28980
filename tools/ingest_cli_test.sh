#!/usr/bin/env bash
# End-to-end test of `hurray ingest`.
#
# Usage: ingest_cli_test.sh HURRAY_BINARY INGEST_TESTDATA_GEN_BINARY
set -uo pipefail
# fail, run, expect_rc, expect_contains; $failures.
source "$(dirname "${BASH_SOURCE[0]}")/testing/cli_checks.sh"

hurray="$(pwd)/$1"
gen="$(pwd)/$2"
work="${TEST_TMPDIR:-$(mktemp -d)}/ingest_cli_test"
rm -rf "${work}"
mkdir -p "${work}"
"${gen}" "${work}/data" || {
  echo "FAIL: ingest_testdata_gen exited with $?" >&2
  exit 1
}
cd "${work}/data" || exit 1

expect_json() {  # expect_json CONTEXT
  if command -v jq >/dev/null 2>&1; then
    printf '%s\n' "${out}" | jq -e -c . >/dev/null 2>&1 ||
      fail "$1: output is not JSON: ${out}"
  fi
}

# --- Validation. ---------------------------------------------------------------

run ingest mixed.hrry
expect_rc 0 "valid .hrry"
expect_contains "${out}" "name" "table header"
expect_contains "${out}" "layers.0.q_proj" "table row"
expect_contains "${out}" "per_channel_affine" "table row"
expect_contains "${out}" "mixed.hrry: OK (7 tensors" "summary"
[[ -z "${err}" ]] || fail "no progress bar when stderr is not a terminal: ${err}"

run ingest --json mixed.hrs
expect_rc 0 "valid stream, --json"
expect_json "valid stream, --json"
expect_contains "${out}" '"valid":true' "--json"
expect_contains "${out}" '"verdict":"valid"' "--json"

run ingest --chunk-size 1 mixed.hrry
expect_rc 0 "--chunk-size 1"

run ingest --agree type=0xF3 --permissive mixed.hrs
expect_rc 0 "--agree and --permissive"

run ingest cut.hrry
expect_rc 1 "truncated file"
expect_contains "${out}" "cut.hrry: FILE-" "truncated file: rule id"

run ingest --json cut.hrry
expect_rc 1 "truncated file --json"
expect_json "truncated file --json"
expect_contains "${out}" '"valid":false' "truncated file --json"
expect_contains "${out}" '"rule":"FILE-' "truncated file --json"

# --- Dequantization. -----------------------------------------------------------

run ingest mixed.hrry --dequant out_hrry
expect_rc 0 "--dequant .hrry"
for f in "embed%2Ftokens.npy" "layers.0.q_proj.npy" "norm.weight.npy" \
  "%2E.%2Fevil%2Fname.npy" "bias.npy" "counts.npy"; do
  [[ -f "out_hrry/${f}" ]] || fail "--dequant .hrry: no out_hrry/${f} ($(ls out_hrry))"
done
[[ -z "$(ls out_hrry | grep -E 'partial|spool|tensor_')" ]] ||
  fail "--dequant .hrry: leftovers: $(ls out_hrry)"
expect_contains "${out}" "converted (5 values)" "int32 tensor converted"
[[ "${out}" != *skipped* ]] || fail "--dequant .hrry: a tensor skipped: ${out}"

run ingest mixed.hrry --dequant out_f32 --format f32
expect_rc 0 "--format f32"
[[ -f out_f32/counts.f32 && -f out_f32/norm.weight.f32 ]] ||
  fail "--format f32: $(ls out_f32)"
run ingest mixed.hrry --dequant out_bf --format npy --dtype bfloat16
expect_rc 2 "--format npy --dtype bfloat16"
expect_contains "${err}" "bfloat16" "npy has no bfloat16"

cat mixed.hrs | "${hurray}" ingest - --dequant out_stdin >/dev/null 2>&1
rc=$?
[[ "${rc}" == 0 ]] || fail "stdin: exit ${rc}"
cmp -s out_stdin/tensor_1.npy out_hrry/layers.0.q_proj.npy ||
  fail "stdin stream and .hrry outputs differ"

# Same bytes as `hurray dequant`.
run dequant one.hrs -o ref.npy
expect_rc 0 "hurray dequant"
run ingest one.hrs --dequant out_one
expect_rc 0 "ingest one tensor"
cmp -s ref.npy out_one/tensor_0.npy || fail "ingest --dequant differs from hurray dequant"
run dequant one.hrs -o ref.f32 --format f32
run ingest one.hrs --dequant out_one_f32 --format f32
cmp -s ref.f32 out_one_f32/tensor_0.f32 || fail "f32: ingest --dequant differs from hurray dequant"

run ingest bad_scale.hrs --dequant out_bad
expect_rc 1 "NaN scale"
expect_contains "${out}" "QNT-PCA" "NaN scale: rule id"
[[ -z "$(ls out_bad)" ]] || fail "NaN scale: output left: $(ls out_bad)"

# --- Hostile names (issue 13, item 4). -----------------------------------------

raw_controls() {  # raw_controls TEXT: true when TEXT holds ESC, NUL-less C0 or DEL
  [[ "$1" =~ [$'\x01'-$'\x08'$'\x0b'-$'\x1f'$'\x7f'] ]]
}
run ingest names.hrry --dequant out_names
expect_rc 0 "hostile names"
raw_controls "${out}" && fail "ingest table: raw control bytes: $(printf '%q' "${out}")"
expect_contains "${out}" '\x1b[31mred\x1b[0m' "ingest table: ESC escaped"
expect_contains "${out}" 'line\nbreak' "ingest table: newline escaped"
expect_contains "${out}" 'nul\x00byte' "ingest table: NUL escaped"
expect_contains "${out}" "$(printf 'x%.0s' $(seq 45))..." "ingest table: long name cut"
[[ "$(printf '%s\n' "${out}" | wc -l)" == 9 ]] ||
  fail "ingest table: a name broke a row: ${out}"
run inspect names.hrry
expect_rc 0 "inspect hostile names"
raw_controls "${out}" && fail "inspect table: raw control bytes: $(printf '%q' "${out}")"
expect_contains "${out}" '\x1b[31mred\x1b[0m' "inspect table: ESC escaped"
# Output names: UTF-8 kept, only what a file name cannot hold escaped.
for f in "层.0.npy" "stats+shard.npy" "%1B[31mred%1B[0m.npy" \
  "line%0Abreak.npy" "nul%00byte.npy" "$(printf 'x%.0s' $(seq 180))~5.npy"; do
  [[ -f "out_names/${f}" ]] || fail "hostile names: no out_names/${f} ($(ls out_names))"
done

# --- Resume. -------------------------------------------------------------------

run ingest mixed.hrry --dequant out_r --resume state
expect_rc 0 "--resume, complete run"
[[ ! -e state ]] || fail "the state file of a finished run is removed"
run ingest cut.hrry --dequant out_c --resume cstate
expect_rc 1 "--resume, rejected"
first="${out}"
expect_contains "${out}" "not written: the input was rejected" "rejected .hrry: the summary"
[[ ! -e cstate ]] || fail "the state file of a rejected run is removed"
[[ -z "$(ls -A out_c)" ]] || fail "a rejected .hrry leaves nothing in OUT: $(ls -A out_c)"
run ingest cut.hrry --dequant out_c --resume cstate
expect_rc 1 "--resume, rerun"
[[ "${out}" == "${first}" ]] || fail "rerun differs:
${out}
---
${first}"
# An interrupted run (killed while its source, a FIFO, waits for more
# bytes) leaves a state that belongs to that source only.
mkfifo fifo
{ head -c 20000 mixed.hrs; sleep 60; } >fifo &
writer=$!
"${hurray}" ingest fifo --dequant out_f --resume fstate >/dev/null 2>&1 &
reader=$!
for _ in $(seq 200); do [[ -s fstate ]] && break; sleep 0.1; done
kill -KILL "${reader}" 2>/dev/null
kill "${writer}" 2>/dev/null
wait "${reader}" "${writer}" 2>/dev/null
[[ -s fstate ]] || fail "the interrupted run wrote no state"
run ingest mixed.hrs --dequant out_f --resume fstate
expect_rc 2 "--resume with another source"
cp fstate fstate2
run ingest fifo --dequant out_f --resume fstate2 --format f32
expect_rc 2 "--resume with another --format"
expect_contains "${err}" "npy/auto" "--resume with another --format: says which"

# --- Network: `hurray serve` on a free port. ------------------------------------

# start_serve FILE PORT: `hurray serve FILE --port PORT` in the background;
# sets serve_pid, and port to the bound port ("" if it did not start).
start_serve() {
  rm -f "${work}/serve.out"  # never an earlier server's line
  "${hurray}" serve "$1" --port "$2" >"${work}/serve.out" 2>"${work}/serve.err" &
  serve_pid=$!
  port=""
  for _ in $(seq 100); do
    kill -0 "${serve_pid}" 2>/dev/null || return
    line="$(head -n 1 "${work}/serve.out" 2>/dev/null)"
    if [[ "${line}" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
      port="${BASH_REMATCH[1]}"
      return
    fi
    sleep 0.1
  done
}
stop_serve() {
  kill "${serve_pid}" 2>/dev/null
  wait "${serve_pid}" 2>/dev/null
}

start_serve mixed.hrry 0
if [[ -z "${port}" ]]; then
  fail "hurray serve did not start: $(cat "${work}/serve.err")"
else
  run ingest "tcp://127.0.0.1:${port}" --dequant out_net --idle-timeout 20
  expect_rc 0 "tcp:// every tensor (listing)"
  expect_contains "${out}" "OK (7 tensors" "tcp:// summary"
  for f in $(ls out_hrry); do
    cmp -s "out_hrry/${f}" "out_net/${f}" || fail "tcp:// output ${f} differs"
  done
  run ingest --json "tcp://127.0.0.1:${port}/bias,layers.0.q_proj"
  expect_rc 0 "tcp:// two names"
  expect_json "tcp:// --json"
  expect_contains "${out}" '"name":"layers.0.q_proj"' "tcp:// names"
  run ingest "tcp://127.0.0.1:${port}" --tensors bias --json
  expect_rc 0 "tcp:// --tensors"
  expect_contains "${out}" '"tensors":[{"index":0,"name":"bias"' "tcp:// --tensors"
  [[ "${out}" != *'"index":1'* ]] || fail "tcp:// --tensors: more than one tensor"
  run ingest "tcp://127.0.0.1:${port}/bias,nope" --resume nstate
  expect_rc 2 "tcp:// unknown name"
  expect_contains "${err}" "UNKNOWN_TENSOR" "tcp:// unknown name"
  [[ -e nstate ]] || fail "tcp:// --resume keeps the names left"
  # Resumed: "bias" is fetched again and matches its record, then "nope"
  # fails again.
  run ingest "tcp://127.0.0.1:${port}/bias,nope" --resume nstate
  expect_rc 2 "tcp:// resumed, unknown name"
  expect_contains "${err}" "UNKNOWN_TENSOR" "tcp:// resumed, the check passed"
  # A record whose data CRC-32C is not the server's: the server's tensor
  # changed since the interrupted run.
  awk '$1 == "record" { $NF = ($NF + 1) % 4294967296 } { print }' nstate >nstate.edit
  mv nstate.edit nstate
  run ingest "tcp://127.0.0.1:${port}/bias,nope" --resume nstate
  expect_rc 2 "tcp:// resumed against changed data"
  expect_contains "${err}" "refusing to resume" "tcp:// changed data"
fi
stop_serve

# --- Network resume bound to the server's file (issue 13): the state records
# what the server says identifies it (hurray:identity); a resumed run against
# another file is refused before anything is fetched, even when the last
# completed tensor is the same. ---------------------------------------------------

cp mixed.hrry served.hrry
start_serve served.hrry 0
id_port="${port}"
if [[ -z "${id_port}" ]]; then
  fail "hurray serve did not start: $(cat "${work}/serve.err")"
else
  url="tcp://127.0.0.1:${id_port}/bias,layers.0.q_proj,nope"
  run ingest "${url}" --dequant out_id --resume istate
  expect_rc 2 "tcp:// identity: first run stops at the unknown name"
  grep -q '^server ' istate || fail "tcp:// identity: the state has no server line"
  stop_serve
  # The same file served again: the identity matches, the run goes on.
  start_serve served.hrry "${id_port}"
  [[ "${port}" == "${id_port}" ]] || fail "hurray serve did not restart on ${id_port}"
  run ingest "${url}" --dequant out_id --resume istate
  expect_rc 2 "tcp:// identity: same file"
  expect_contains "${err}" "UNKNOWN_TENSOR" "tcp:// identity: same file resumes"
  stop_serve
  # A copy of the same bytes (another inode and mtime) is another file.
  cp served.hrry served.new && mv served.new served.hrry
  before="$(cd out_id && ls -la --time-style=full-iso . && cksum ./*)"
  start_serve served.hrry "${id_port}"
  run ingest "${url}" --dequant out_id --resume istate
  expect_rc 2 "tcp:// identity: another file"
  expect_contains "${err}" "server's file changed" "tcp:// identity: another file"
  [[ "${err}" != *UNKNOWN_TENSOR* ]] ||
    fail "tcp:// identity: another file was fetched from: ${err}"
  after="$(cd out_id && ls -la --time-style=full-iso . && cksum ./*)"
  [[ "${before}" == "${after}" ]] || fail "tcp:// identity: OUT changed"
  stop_serve
fi

# --- Deadlines (issue 13): a FIFO whose writer never writes. ---------------------

mkfifo silent.fifo
sleep 30 > silent.fifo &
writer=$!
out="$(timeout 15 "${hurray}" ingest silent.fifo --idle-timeout 1 2>"${work}/stderr")"
rc=$?
err="$(cat "${work}/stderr")"
expect_rc 2 "FIFO with a silent writer"
expect_contains "${out}${err}" "idle timeout" "FIFO with a silent writer"
kill "${writer}" 2>/dev/null
wait "${writer}" 2>/dev/null
rm -f silent.fifo

# --- Usage. --------------------------------------------------------------------

run ingest
expect_rc 2 "no source"
run ingest --chunk-size 0 mixed.hrry
expect_rc 2 "bad --chunk-size"
run ingest - --resume s
expect_rc 2 "stdin cannot resume"
run ingest tcp://nohostport
expect_rc 2 "tcp:// without a port"
run ingest missing.hrry
expect_rc 2 "missing file"

if [[ "${failures}" -gt 0 ]]; then
  echo "${failures} failure(s)" >&2
  exit 1
fi
echo "PASS"
