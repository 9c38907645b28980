#!/usr/bin/env bash
# End-to-end test of the hurray command-line tool.
#
# Usage: cli_test.sh HURRAY_BINARY TESTDATA_GEN_BINARY
# (paths relative to the runfiles directory, as `bazel test` passes them).
# The test inputs are written by testdata_gen (see tools/testing/testdata_gen.cc).
set -uo pipefail
# fail, run, expect_rc, expect_contains; $failures.
source "$(dirname "${BASH_SOURCE[0]}")/testing/cli_checks.sh"

hurray="$(pwd)/$1"
gen="$(pwd)/$2"
work="${TEST_TMPDIR:-$(mktemp -d)}/cli_test"
rm -rf "${work}"
mkdir -p "${work}"
"${gen}" "${work}/data" || {
  echo "FAIL: testdata_gen exited with $?" >&2
  exit 1
}
cd "${work}/data" || exit 1

expect_eq() {  # expect_eq GOT WANT CONTEXT
  [[ "$1" == "$2" ]] || fail "$3:
   got: $1
  want: $2"
}

# Every line of stdout parses as JSON (when jq is installed).
expect_json_lines() {  # expect_json_lines CONTEXT
  if command -v jq >/dev/null 2>&1; then
    printf '%s\n' "${out}" | jq -e -c . >/dev/null 2>&1 ||
      fail "$1: output is not one JSON value per line:
${out}"
  fi
}

# --- Usage and help. ---------------------------------------------------------

run
expect_rc 2 "no arguments"
expect_contains "${err}" "Usage: hurray" "no arguments"

for help in --help -h help; do
  run "${help}"
  expect_rc 0 "hurray ${help}"
  expect_contains "${out}" "Usage: hurray" "hurray ${help}"
  expect_contains "${out}" "inspect [--json] [--permissive] [--agree KIND=VALUE]... FILE..." \
    "hurray ${help}"
  expect_eq "${err}" "" "hurray ${help} stderr"
done

run frobnicate valid/dense_f32_3x4.bin
expect_rc 2 "unknown subcommand"
expect_contains "${err}" "unknown command 'frobnicate'" "unknown subcommand"
expect_contains "${err}" "Usage: hurray" "unknown subcommand"

for cmd in inspect validate; do
  run "${cmd}"
  expect_rc 2 "${cmd} without files"
  expect_contains "${err}" "no input files" "${cmd} without files"
  expect_contains "${err}" "Usage: hurray" "${cmd} without files"

  # A usage error shows the command's own usage, not the whole manual.
  expect_contains "${err}" "Usage: hurray ${cmd} " "${cmd} without files"
  expect_contains "${err}" "'hurray ${cmd} --help' shows its options" \
    "${cmd} without files"
  [[ $(printf '%s\n' "${err}" | wc -l) -le 20 ]] ||
    fail "${cmd} without files: the usage error is $(printf '%s\n' "${err}" | wc -l) lines"

  run "${cmd}" --bogus valid/dense_f32_3x4.bin
  expect_rc 2 "${cmd} --bogus"
  expect_contains "${err}" "unknown option '--bogus'" "${cmd} --bogus"
  expect_eq "${out}" "" "${cmd} --bogus stdout"

  run "${cmd}" --help
  expect_rc 0 "${cmd} --help"
  expect_contains "${out}" "Usage: hurray" "${cmd} --help"
done

# `hurray COMMAND --help` (and `hurray help COMMAND`) is that command's page
# alone: its own usage, no other command's.
for cmd in inspect validate dequant pack convert serve ingest; do
  for form in "${cmd} --help" "${cmd} -h" "help ${cmd}"; do
    # shellcheck disable=SC2086
    run ${form}
    expect_rc 0 "${form}"
    expect_contains "${out}" "Usage: hurray ${cmd} " "${form}"
    expect_eq "${err}" "" "${form} stderr"
    for other in inspect validate dequant pack convert serve ingest; do
      [[ "${other}" == "${cmd}" ]] && continue
      if printf '%s\n' "${out}" | grep -q "hurray ${other} "; then
        fail "${form}: the page shows '${other}' too"
      fi
    done
    [[ $(printf '%s\n' "${out}" | wc -l) -le 90 ]] ||
      fail "${form}: $(printf '%s\n' "${out}" | wc -l) lines"
  done
done
run help frobnicate
expect_rc 2 "help frobnicate"
expect_contains "${err}" "unknown command 'frobnicate'" "help frobnicate"
# The overview names every command and says how to get a page.
run --help
for cmd in inspect validate dequant pack convert serve ingest; do
  expect_contains "${out}" "  ${cmd} " "--help lists ${cmd}"
done
expect_contains "${out}" "hurray <command> --help" "--help names the pages"
# A hostile command name is escaped, never echoed raw.
run $'frob\e]0;x\a'
expect_rc 2 "escaped unknown command"
if printf '%s' "${err}" | grep -q $'\e'; then
  fail "unknown command: a raw ESC reached the terminal"
fi

run validate --json valid/dense_f32_3x4.bin
expect_rc 2 "validate --json"

# Every command parses its options with the one table parser
# (tools/arg_parser.h): an unknown option, an option missing its value and a
# value given to an option without one are usage errors (exit 2, nothing on
# stdout) that name the option, show the command's synopsis and point at its
# page; an option in the message is escaped.
expect_usage_error() {  # expect_usage_error CMD MESSAGE CONTEXT
  expect_rc 2 "$3"
  expect_contains "${err}" "hurray $1: $2" "$3"
  expect_contains "${err}" "Usage: hurray $1 " "$3"
  expect_contains "${err}" "'hurray $1 --help' shows its options" "$3"
  expect_eq "${out}" "" "$3 stdout"
}
declare -A value_option=([inspect]=--agree [validate]=--agree
  [dequant]=--output [pack]=--output [convert]=--output [serve]=--port
  [ingest]=--resume)
for cmd in inspect validate dequant pack convert serve ingest; do
  for bogus in --bogus --bogus=1; do
    run "${cmd}" "${bogus}" valid/dense_f32_3x4.bin
    expect_usage_error "${cmd}" "unknown option '--bogus'" "${cmd} ${bogus}"
  done
  opt="${value_option[${cmd}]}"
  run "${cmd}" valid/dense_f32_3x4.bin "${opt}"
  expect_usage_error "${cmd}" "${opt} needs a value" "${cmd} ... ${opt}"
  run "${cmd}" "${opt}=" valid/dense_f32_3x4.bin
  expect_usage_error "${cmd}" "${opt} needs a value" "${cmd} ${opt}="
  run "${cmd}" --help=yes
  expect_usage_error "${cmd}" "--help takes no value" "${cmd} --help=yes"
  run "${cmd}" $'--\e]0;x\a' valid/dense_f32_3x4.bin
  expect_usage_error "${cmd}" "unknown option '--\\x1b]0;x\\x07'" \
    "${cmd} escaped option"
  if printf '%s' "${err}" | grep -q $'\e'; then
    fail "${cmd}: a raw ESC in an option reached the terminal"
  fi
done
# A file name in any message (cannot open, a verdict, what was written) is
# escaped too: hostile names never reach the terminal raw.
evil=$'no\e]0;x\a.bin'
for args in "inspect ${evil}" "validate ${evil}" "dequant ${evil} -o x.npy" \
  "pack a=${evil} -o p.hrry"; do
  read -r -a argv <<<"${args}"
  run "${argv[@]}"
  if printf '%s%s' "${out}" "${err}" | grep -q $'\e'; then
    fail "${argv[0]}: a raw ESC in a file name reached the terminal"
  fi
  expect_contains "${out}${err}" 'no\x1b]0;x\x07.bin' "${argv[0]} escaped name"
done
cp valid/dense_f32_3x4.bin "${evil}"
run validate "${evil}"
expect_rc 0 "validate an escaped name"
expect_eq "${out}" 'no\x1b]0;x\x07.bin: OK' "validate prints the name escaped"
rm -f "${evil}"

# --name=VALUE is --name VALUE.
run validate --agree=type=0xF3 valid/extension_type_f3.bin
expect_rc 0 "validate --agree=type=0xF3"

# --- inspect --json. -----------------------------------------------------------

# The full line for a valid dense float32 [3, 4]: keys, order, values.
run inspect --json valid/dense_f32_3x4.bin
expect_rc 0 "inspect --json dense"
expect_eq "${out}" \
  '{"file":"valid/dense_f32_3x4.bin","valid":true,"descriptor_length":61,"version_major":1,"version_minor":0,"flags":0,"element_type_tag":3,"layout_tag":1,"rank":2,"shape":[3,4],"byte_offset":0,"buffers":[{"byte_size":48,"alignment":64,"device_tag":0,"sync_mode":0,"memory_class":0}],"quantization":null,"has_shard":false,"has_statistics":false,"has_extension_type":false,"has_composite_member":false,"element_type_name":"float32","layout_name":"row_major","layout":{"name":"row_major"},"shard":null,"statistics":null,"extension_type":null,"composite_member":null}' \
  "inspect --json dense_f32_3x4"

# u64 max for a dynamic dimension, printed exactly.
run inspect --json valid/dense_dynamic_f16.bin
expect_rc 0 "inspect --json dynamic"
expect_contains "${out}" '"rank":2,"shape":[18446744073709551615,8],' \
  "dynamic dimension"

# Per-tensor affine: scale as a round-trippable double, the rest null.
run inspect --json valid/per_tensor_int8.bin
expect_rc 0 "inspect --json per_tensor_int8"
expect_contains "${out}" '"quantization":{"scheme_tag":1,"scheme_version":1,"flags":0,"axis":null,"block_size":null,"scale_buffer_index":null,"zero_point_buffer_index":null,"scale_type_tag":null,"scale":0.05000000074505806,"zero_point":-3},' \
  "per-tensor quantization"

# Symmetric per-channel: no zero-point buffer.
run inspect --json valid/per_channel_sym_int4.bin
expect_rc 0 "inspect --json per_channel_sym_int4"
expect_contains "${out}" '"quantization":{"scheme_tag":2,"scheme_version":1,"flags":1,"axis":1,"block_size":null,"scale_buffer_index":1,"zero_point_buffer_index":null,"scale_type_tag":3,"scale":null,"zero_point":null},' \
  "symmetric per-channel quantization"

# Rejections: rule, offset, message.
run inspect --json bad_magic.bin
expect_rc 1 "inspect --json bad_magic"
expect_eq "${out}" \
  '{"file":"bad_magic.bin","valid":false,"rule":"DESC-HDR-02","offset":0,"error":"magic is not \"HRRY\""}' \
  "bad magic"

run inspect --json pca_scale_type_f16.bin
expect_rc 1 "inspect --json pca_scale_type_f16"
expect_eq "${out}" \
  '{"file":"pca_scale_type_f16.bin","valid":false,"rule":"QNT-PCA-03","offset":113,"error":"scale_type_tag is not float32"}' \
  "per-channel scale_type_tag"

run inspect --json truncated.bin
expect_rc 1 "inspect --json truncated"
expect_contains "${out}" '"valid":false,"rule":"DESC-HDR-01","offset":56,' \
  "truncated"

# Bytes after descriptor_length (data buffers) are ignored.
run inspect --json trailing_data.bin
expect_rc 0 "inspect --json trailing_data"
expect_contains "${out}" '"valid":true,"descriptor_length":61,' \
  "trailing data"

# Strict rejects the unassigned layout tag 0x0C; permissive decodes the
# header and reports the buffer table as not parsed.
run inspect --json unknown_layout_0c.bin
expect_rc 1 "strict unknown layout"
expect_eq "${out}" \
  '{"file":"unknown_layout_0c.bin","valid":false,"rule":"LAY-TAG-02","offset":15,"error":"layout_tag is not assigned"}' \
  "strict unknown layout"
run inspect --json --permissive unknown_layout_0c.bin
expect_rc 0 "permissive unknown layout"
expect_contains "${out}" '"valid":true,' "permissive unknown layout"
expect_contains "${out}" '"layout_tag":12,"rank":2,"shape":[3,4],"byte_offset":0,"buffers":null,"quantization":null,' \
  "permissive unknown layout"
expect_contains "${out}" '"layout_name":"unknown","layout":null,' "permissive unknown layout"

# Uninterpreted scheme (permissive): only the header fields are non-null.
run inspect --json unassigned_scheme_06.bin
expect_rc 1 "strict unassigned scheme"
expect_contains "${out}" '"rule":"QNT-HDR-05",' "strict unassigned scheme"
run inspect --permissive --json unassigned_scheme_06.bin
expect_rc 0 "permissive unassigned scheme"
expect_contains "${out}" '"quantization":{"scheme_tag":6,"scheme_version":1,"flags":0,"axis":null,"block_size":null,"scale_buffer_index":null,"zero_point_buffer_index":null,"scale_type_tag":null,"scale":null,"zero_point":null},' \
  "permissive unassigned scheme"

# One line per file, in argument order; the worst result decides the exit
# code.
run inspect --json valid/dense_f32_3x4.bin bad_magic.bin valid/nf4_uint4.bin
expect_rc 1 "inspect --json mixed"
expect_eq "$(printf '%s\n' "${out}" | wc -l | tr -d ' ')" 3 "mixed: line count"
expect_eq "$(printf '%s\n' "${out}" |
  sed -E 's/^\{"file":"([^"]*)","valid":(true|false),.*/\1 \2/')" \
  "valid/dense_f32_3x4.bin true
bad_magic.bin false
valid/nf4_uint4.bin true" "mixed: order"
expect_json_lines "inspect --json mixed"

# Every vector decodes in permissive mode (strict needs agreements for the
# private tags some of them use), and every line is JSON.
run inspect --json --permissive valid/*.bin
expect_rc 0 "inspect --json --permissive valid/*"
expect_json_lines "inspect --json --permissive valid/*"
valid_files=(valid/*.bin)
expect_eq "$(printf '%s\n' "${out}" | wc -l | tr -d ' ')" \
  "${#valid_files[@]}" "one line per file"

# File names are JSON-escaped: quote, backslash, control character.
weird="$(printf 'we"ird\\na\tme.bin')"
cp valid/dense_f32_3x4.bin "${weird}"
run inspect --json "${weird}"
expect_rc 0 "weird file name"
expect_contains "${out}" '{"file":"we\"ird\\na\tme.bin","valid":true,' \
  "weird file name"
expect_json_lines "weird file name"

# --- Exit code 2: I/O errors. --------------------------------------------------

run inspect --json missing.bin valid/dense_f32_3x4.bin
expect_rc 2 "missing file"
expect_contains "${err}" "missing.bin" "missing file"
# The other files are still inspected.
expect_contains "${out}" '"file":"valid/dense_f32_3x4.bin","valid":true' \
  "missing file: continues"

# I/O errors win over rejections.
run validate missing.bin bad_magic.bin
expect_rc 2 "missing file + rejection"
expect_eq "${out}" 'bad_magic.bin: DESC-HDR-02 at byte 0: magic is not "HRRY"' \
  "missing file + rejection"

run inspect valid
expect_rc 2 "directory"

# Only what the descriptor needs is read (issue 13): a big file, an endless
# device and a pipe whose writer never closes are judged on their first
# bytes. (Before: up to 64 MiB read, then "too large", exit 2; the pipe
# waited for its writer to close.)
truncate -s $((64 * 1024 * 1024 + 1)) huge.bin
run validate huge.bin valid/dense_f32_3x4.bin
expect_rc 1 "zero file over 64 MiB"
expect_eq "${out}" 'huge.bin: DESC-HDR-02 at byte 0: magic is not "HRRY"
valid/dense_f32_3x4.bin: OK' "zero file over 64 MiB"
rm -f huge.bin
cp valid/dense_f32_3x4.bin huge_tail.bin
truncate -s $((64 * 1024 * 1024 + 1)) huge_tail.bin
run validate huge_tail.bin
expect_rc 0 "descriptor followed by 64 MiB"
rm -f huge_tail.bin
run validate /dev/zero
expect_rc 1 "/dev/zero"
expect_contains "${out}" "/dev/zero: DESC-HDR-02 at byte 0" "/dev/zero"
mkfifo pipe.bin
(cat valid/dense_f32_3x4.bin; sleep 30) > pipe.bin &
writer=$!
out="$(timeout 10 "${hurray}" inspect pipe.bin 2>"${work}/pipe.err")"
rc=$?
err="$(cat "${work}/pipe.err")"
expect_rc 0 "a pipe whose writer stays open"
expect_contains "${out}" "pipe.bin: OK" "a pipe whose writer stays open"
kill "${writer}" 2>/dev/null
wait "${writer}" 2>/dev/null
rm -f pipe.bin

# --- validate. ---------------------------------------------------------------

run validate valid/dense_f32_3x4.bin valid/dense_dynamic_f16.bin \
  valid/per_tensor_int8.bin valid/per_channel_asym_int8.bin \
  valid/per_block_asym_uint4.bin valid/nf4_uint4.bin valid/mxfp_e4m3.bin \
  valid/shard_f32_8x4.bin valid/statistics_f32_16.bin valid/everything.bin \
  trailing_data.bin
expect_rc 0 "validate valid"
expect_eq "$(printf '%s\n' "${out}" | head -n 2)" \
  "valid/dense_f32_3x4.bin: OK
valid/dense_dynamic_f16.bin: OK" "validate valid"
expect_eq "$(printf '%s\n' "${out}" | grep -vc ': OK$')" 0 "validate valid"

run validate --permissive valid/*.bin
expect_rc 0 "validate --permissive valid/*"

run validate valid/dense_f32_3x4.bin pca_scale_type_f16.bin unknown_layout_0c.bin
expect_rc 1 "validate rejected"
expect_eq "${out}" "valid/dense_f32_3x4.bin: OK
pca_scale_type_f16.bin: QNT-PCA-03 at byte 113: scale_type_tag is not float32
unknown_layout_0c.bin: LAY-TAG-02 at byte 15: layout_tag is not assigned" \
  "validate rejected"

run validate --permissive unknown_layout_0c.bin
expect_rc 0 "validate --permissive unknown layout"
expect_eq "${out}" "unknown_layout_0c.bin: OK" "validate --permissive"

run validate valid/extension_type_f3.bin
expect_rc 1 "validate private type tag"
expect_contains "${out}" "valid/extension_type_f3.bin: TYPE-06 at byte 14:" \
  "validate private type tag"

# "--" ends the options.
cp valid/dense_f32_3x4.bin ./--json
run validate -- --json
expect_rc 0 "validate -- --json"
expect_eq "${out}" "--json: OK" "validate -- --json"

# --- inspect (text). -----------------------------------------------------------

run inspect valid/dense_dynamic_f16.bin
expect_rc 0 "inspect text"
expect_contains "${out}" "valid/dense_dynamic_f16.bin: OK" "inspect text"
expect_contains "${out}" "float16" "inspect text"
expect_contains "${out}" "row_major" "inspect text"
expect_contains "${out}" "[?, 8]" "inspect text"

run inspect valid/per_block_asym_uint4.bin valid/everything.bin
expect_rc 0 "inspect text quantized"
expect_contains "${out}" "per_block_affine" "inspect text quantized"
expect_contains "${out}" "block_size 32" "inspect text quantized"
expect_contains "${out}" "#0: 512 bytes" "inspect text quantized"
expect_contains "${out}" "shard, statistics, composite_member" \
  "inspect text sections"

run inspect pca_scale_type_f16.bin
expect_rc 1 "inspect text rejected"
expect_contains "${out}" "pca_scale_type_f16.bin: REJECTED" \
  "inspect text rejected"
expect_contains "${out}" "QNT-PCA-03" "inspect text rejected"
expect_contains "${out}" "113" "inspect text rejected"
expect_contains "${out}" "scale_type_tag is not float32" \
  "inspect text rejected"

# --agree accepts agreed private values in strict mode (TYPE-06, LAY-TAG-04).
run validate --agree type=0xF3 valid/extension_type_f3.bin
expect_rc 0 "--agree type"
expect_eq "${out}" "valid/extension_type_f3.bin: OK" "--agree type"
run validate --agree type=0xF4 valid/extension_type_f3.bin
expect_rc 1 "--agree another type"
run validate --agree layout-id=24301 valid/extension_layout_f7.bin
expect_rc 0 "--agree layout-id"
run validate --agree layout-id=0x5EED valid/extension_layout_f7.bin
expect_rc 0 "--agree layout-id hex"
run validate --agree type=0x10 valid/extension_type_f3.bin
expect_rc 2 "--agree public tag"
expect_contains "${err}" "needs a private tag" "--agree public tag"
run validate --agree bogus=1 valid/extension_type_f3.bin
expect_rc 2 "--agree unknown kind"
run validate valid/extension_type_f3.bin --agree
expect_rc 2 "--agree without value"

# --- .hrry files: pack --sample, then inspect and validate the whole file. ----

run pack --sample -o sample.hrry
expect_rc 0 "pack --sample"
run validate sample.hrry
expect_rc 0 "validate sample.hrry"
expect_eq "${out}" "sample.hrry: OK (7 tensors)" "validate sample.hrry"
run inspect sample.hrry
expect_rc 0 "inspect sample.hrry"
for scheme in per_tensor_affine per_channel_affine per_block_affine nf4 mxfp; do
  expect_contains "${out}" "${scheme}" "inspect sample.hrry"
done
run inspect --json sample.hrry
expect_rc 0 "inspect --json sample.hrry"
expect_json_lines "inspect --json sample.hrry"
expect_contains "${out}" '"container":"hrry","valid":true' "inspect --json"
# A file cut short: the trailer is missing.
head -c 200 sample.hrry >cut.hrry
run validate cut.hrry
expect_rc 1 "validate cut.hrry"
expect_contains "${out}" "cut.hrry: FILE-" "validate cut.hrry"

# --- convert: safetensors to .hrry (told apart by content, not name). --------

hdr='{"__metadata__":{"k":"v"},"w":{"dtype":"U8","shape":[2,1],"data_offsets":[0,2]}}'
{
  printf "\\x$(printf %02x ${#hdr})\\0\\0\\0\\0\\0\\0\\0"
  printf '%s' "${hdr}"
  printf '\x07\x09'
} >model.bin
run convert model.bin -o converted.hrry
expect_rc 0 "convert model.bin"
expect_contains "${out}" "U8 -> uint8" "convert model.bin"
run validate converted.hrry
expect_eq "${out}" "converted.hrry: OK (1 tensors)" "validate converted.hrry"
run inspect converted.hrry
expect_contains "${out}" 'kv k = "v"' "inspect converted.hrry"
# A lying offset: refused (exit 1) naming the tensor, nothing written.
printf '%s' "${hdr}" | sed 's/0,2/0,3/' >hdr.txt
{
  printf "\\x$(printf %02x ${#hdr})\\0\\0\\0\\0\\0\\0\\0"
  cat hdr.txt
  printf '\x07\x09'
} >bad.bin
run convert bad.bin -o bad.hrry
expect_rc 1 "convert bad.bin"
expect_contains "${err}" "tensor 'w'" "convert bad.bin"
[[ -e bad.hrry ]] && fail "convert bad.bin left bad.hrry"
run convert sample.hrry -o x.hrry
expect_rc 1 "convert sample.hrry"
run convert model.bin
expect_rc 2 "convert without -o"
# A later value replaces an earlier one; a short option takes no "=VALUE".
run convert model.bin -o first.hrry --output=second.hrry
expect_rc 0 "convert -o twice"
[[ -e first.hrry ]] && fail "convert -o twice: wrote the first -o"
[[ -e second.hrry ]] || fail "convert -o twice: did not write the last -o"
run convert model.bin -o=x.hrry
expect_usage_error convert "unknown option '-o=x.hrry'" "convert -o=x.hrry"
# --data-alignment (issue 47 item 3): 2 MiB declared in the header
# (offset 16) and the buffer at 2 MiB, read back by validate and inspect.
run convert model.bin -o wide.hrry --data-alignment 2097152
expect_rc 0 "convert --data-alignment 2097152"
expect_eq "$(od -An -tu4 -j16 -N4 wide.hrry | tr -d ' ')" 2097152 \
  "wide.hrry data_buffer_alignment"
expect_eq "$(od -An -tx1 -j2097152 -N2 wide.hrry | tr -d ' ')" 0709 \
  "wide.hrry buffer at 2 MiB"
run validate wide.hrry
expect_eq "${out}" "wide.hrry: OK (1 tensors)" "validate wide.hrry"
run inspect wide.hrry
expect_contains "${out}" 'kv k = "v"' "inspect wide.hrry"
for bad in 2048 4097 12288 4194304 2M -4096 0x1000; do
  run convert model.bin -o badalign.hrry --data-alignment "${bad}"
  expect_usage_error convert \
    "--data-alignment needs a power of two of bytes from 4096 to 2097152" \
    "convert --data-alignment '${bad}'"
  [[ -e badalign.hrry ]] && fail "convert --data-alignment '${bad}' wrote"
done

if ((failures > 0)); then
  echo "${failures} check(s) failed" >&2
  exit 1
fi
echo "PASS"
