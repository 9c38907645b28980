# Shared checks of the CLI's shell tests (sourced, not run). The caller sets
# $hurray (the binary) and $work (a scratch directory) and, at the end,
# exits with the number of failures: `exit "$((failures > 0))"`.

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run ARGS...: runs hurray; sets $out, $err and $rc.
run() {
  out="$("${hurray}" "$@" 2>"${work}/stderr")"
  rc=$?
  err="$(cat "${work}/stderr")"
}

expect_rc() {  # expect_rc WANT CONTEXT
  [[ "${rc}" == "$1" ]] || fail "$2: exit code ${rc}, want $1 (stderr: ${err}; stdout: ${out})"
}

expect_contains() {  # expect_contains HAYSTACK NEEDLE CONTEXT
  [[ "$1" == *"$2"* ]] || fail "$3: output does not contain '$2':
$1"
}
