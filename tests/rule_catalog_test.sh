#!/bin/bash
# Every rule of the catalog (parser/rule_list.inc), whatever its level
# (descriptor, data, container: stream, file, network), has a test, or is
# listed with its reason in tests/rule_test_exceptions.txt (the one list of
# exceptions).
#
# A rule has a test when a test source names it as an expected outcome: its
# id as a string literal ("QNT-MX-07") or its enumerator (Rule::kQntMx07).
# Test sources: the *_test*.cc and *_test.sh files of dequant/, stream/,
# tests/ and tools/, and stream/net/testing/net_rule_cases.cc (the network rule table
# net_rules_test runs). Prints where each rule's test lives.
#
# Usage: rule_catalog_test.sh RULE_LIST EXCEPTIONS TEST_SOURCE...
set -euo pipefail

rule_list=$1
exceptions=$2
shift 2
sources=("$@")

fail=0
error() {
  echo "FAIL: $*" >&2
  fail=1
}

# The test source naming rule <enumerator> <id> first, or nothing.
tested_in() {
  grep -lE "\"$2\"|Rule::$1([^A-Za-z0-9_]|\$)" "${sources[@]}" 2>/dev/null |
    head -n 1 || true
}

# Guard against a check that cannot fail: a rule no test names must be found
# untested, one that rule_test.cc names must be found tested.
[[ -z "$(tested_in kNoSuchRule NO-SUCH-RULE-01)" ]] ||
  error "the search finds a test for a rule that does not exist"
[[ -n "$(tested_in kDescHdr01 DESC-HDR-01)" ]] ||
  error "the search finds no test for DESC-HDR-01"
(( ${#sources[@]} >= 30 )) || error "only ${#sources[@]} test sources"

# id -> reason.
declare -A reason=()
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  id=${line%% *}
  why=${line#* }
  [[ "$why" != "$line" && ${#why} -ge 20 ]] ||
    error "$id: an exception needs a reason"
  [[ -z "${reason[$id]+x}" ]] || error "$id is listed twice"
  reason[$id]=$why
done <"$exceptions"

rules=0
declare -A known=()
while read -r enumerator id; do
  rules=$((rules + 1))
  known[$id]=1
  where=$(tested_in "$enumerator" "$id")
  if [[ -n "${reason[$id]+x}" ]]; then
    if [[ -n "$where" ]]; then
      error "$id is listed as an exception but tested in $where"
    else
      printf '%-20s excepted: %s\n' "$id" "${reason[$id]}"
    fi
  elif [[ -n "$where" ]]; then
    printf '%-20s %s\n' "$id" "$where"
  else
    error "$id has no test (name it in a test, or list it with a reason in" \
      "tests/rule_test_exceptions.txt)"
  fi
done < <(sed -n 's/^X(\(k[A-Za-z0-9]*\), "\([A-Z0-9-]*\)".*/\1 \2/p' \
  "$rule_list")

(( rules >= 300 )) || error "only $rules rules read from $rule_list"
for id in "${!reason[@]}"; do
  [[ -n "${known[$id]+x}" ]] || error "exception $id is not a rule"
done

echo "$rules rules, ${#reason[@]} exceptions, ${#sources[@]} test sources"
exit $fail
