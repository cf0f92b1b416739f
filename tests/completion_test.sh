#!/usr/bin/env bash
# The bash completion (dist/idgen.bash-completion), sourced and called as
# bash calls it: COMP_LINE/COMP_POINT, and COMP_WORDS/COMP_CWORD split as
# bash splits them (at blanks, and around : and =); also with COMP_WORDS
# alone.  Usage: completion_test.sh IDGEN COMPLETION_FILE.
# Ends with "N passed, N failed".
set -u
idgen=${1:?usage: completion_test.sh IDGEN COMPLETION_FILE}
# shellcheck source=/dev/null
source "${2:?}"
pass=0
fail=0

# complete LINE: COMPREPLY for the cursor at the end of LINE.
complete_line() {
  COMP_LINE=$1
  COMP_POINT=${#1}
  # shellcheck disable=SC2207
  COMP_WORDS=($(sed 's/\([:=]\)/ \1 /g' <<<"$1"))
  [[ $1 == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _idgen
}
# expect LINE WORD...: each WORD is offered.  expect_only LINE WORD...: exactly those.
expect() {
  local line=$1 w missing=""
  shift
  complete_line "$line"
  for w in "$@"; do
    printf '%s\n' "${COMPREPLY[@]}" | grep -qxF -- "$w" || missing+=" $w"
  done
  if [ -z "$missing" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL: '$line<TAB>' does not offer$missing (offers: ${COMPREPLY[*]})" >&2
  fi
}
expect_only() {
  local line=$1
  shift
  complete_line "$line"
  if [ "${COMPREPLY[*]}" = "$*" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL: '$line<TAB>' offers '${COMPREPLY[*]}', not '$*'" >&2
  fi
}

I=$idgen
expect_only "$I sn" snowflake
expect "$I " snowflake ulid uuid7 decode layouts plan bench registry serve seq
expect "$I -" --help --version
expect_only "$I serve --reg" --registry
expect "$I serve --" --http --resp --max-batch --cache --audit-log --config --check-config
expect "$I snowflake --layout " twitter sonyflake discord instagram
expect_only "$I snowflake -l so" sonyflake
expect_only "$I serve --layout=tw" twitter
expect "$I serve --layout=" twitter sonyflake
expect_only "$I serve --clock " fast precise coarse
expect_only "$I ulid --clock " fast precise coarse
expect_only "$I uuid7 --clock " fast precise coarse
expect "$I pub" public
expect "$I public --" --reverse --kind --layout --prefix --form --key-version --public-key --new-key --add --json
expect_only "$I public --kind " snowflake ulid uuid7
expect_only "$I public --form " int text
expect "$I public --layout " twitter js53
expect "$I snowflake --public-" --public-key --public-prefix --public-form
expect_only "$I snowflake --public-form " auto int text
expect_only "$I uuid7 --public-form " auto int text
expect "$I ulid --" --public-key --public-prefix --public-form
expect_only "$I serve --cache-on-empty f" fail
expect_only "$I decode --format " text json baidu
expect_only "$I registry " list free
expect "$I registry list --" --registry --json
expect "$I seq " list set
expect "$I seq orders --" --count --format --tz --strict --json --registry --seq-min-step
expect "$I seq orders --registry " static file: postgres://
expect_only "$I decode " # IDs: nothing to offer
expect "$I snowflake " --count --worker --layout --node
expect_only "$I ulid --m" --monotonic
expect_only "$I plan --max-b" --max-borrow-ms
expect "$I serve --registry " static file: postgres:// etcd:// idgen:// idgens://
# After "postgres:" readline replaces only what follows the colon.
expect_only "$I serve --registry postgres:" //
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/reg-one"
expect_only "$I serve --registry file:$dir/reg" "$dir/reg-one"
touch "$dir/idgen.conf"
expect_only "$I serve --config $dir/idgen.c" "$dir/idgen.conf"

# COMP_WORDS alone (no COMP_LINE), as a caller other than bash may set them.
unset COMP_LINE COMP_POINT
COMP_WORDS=("$I" snowflake --layout "")
COMP_CWORD=3
_idgen
if printf '%s\n' "${COMPREPLY[@]}" | grep -qx twitter; then pass=$((pass + 1)); else
  fail=$((fail + 1))
  echo "FAIL: COMP_WORDS alone: snowflake --layout offers '${COMPREPLY[*]}'" >&2
fi
# An idgen that is not there: nothing, and no error.
COMP_WORDS=(/nonexistent/idgen sn)
COMP_CWORD=1
if _idgen 2>/dev/null && [ ${#COMPREPLY[@]} = 0 ]; then pass=$((pass + 1)); else
  fail=$((fail + 1))
  echo "FAIL: a missing idgen offers '${COMPREPLY[*]}'" >&2
fi
# Registered for idgen.
complete -p idgen | grep -q -- '-F _idgen' && pass=$((pass + 1)) || {
  fail=$((fail + 1))
  echo "FAIL: complete -p idgen: $(complete -p idgen 2>&1)" >&2
}

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
