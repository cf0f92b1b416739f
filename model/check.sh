#!/usr/bin/env bash
# Checks the registry protocol's models with spin: every case in model/*.cases.
#
#   model/check.sh [--keep DIR] [--jobs N] [--list] [NAME_PATTERN]
#
# A case line is `NAME MODEL EXPECT SWITCH...`:
#   MODEL   a file in model/ (net.pml, file.pml, proxy.pml, seq.pml)
#   EXPECT  ok            every property holds: the search finishes with no
#                         error, within the depth and memory limits;
#           fail:PROP     spin must find a counterexample to property PROP
#                         (unique, increasing, fenced, durable, valid,
#                         ordered, counted): a mutation (one rule of the
#                         implementation removed) or a documented exception.
#   SWITCH  -DNAME[=VALUE] for spin's preprocessor (the bounds, MUT_*, ...).
# `ok` cases search depth-first with COLLAPSE compression; `fail:` cases
# breadth-first, which finds a shortest counterexample and does not get lost
# in a deep corner of the space.  Each model asserts its properties as
# `assert(PROP && (condition))` with a bit PROP = 1, so the name of the
# violated property is in pan's message.
# Cases run N at a time (--jobs, default: the number of cores); each pan is
# limited to MODEL_MEMLIM MB (default 4000) and, depth-first, to MODEL_DEPTH
# steps (default 1000000).  --keep DIR keeps each case's pan, its output and
# its trail (replay one with the `spin -t` line printed for a failed case).
#
# Exit status: 0 when every case gave what it expects, 1 otherwise, 2 on a
# usage or set-up error.  Needs spin and a C compiler.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
keep=""
jobs=$(nproc 2>/dev/null || echo 1)
list=0
pattern=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) pattern="$1"; shift ;;
  esac
done

command -v spin >/dev/null || { echo "check.sh: spin is not installed (apt-get install -y spin)" >&2; exit 2; }
cc=${CC:-cc}
memlim=${MODEL_MEMLIM:-4000}
depth=${MODEL_DEPTH:-1000000}

cases=$(cat "$here"/*.cases | sed -e 's/#.*//' -e '/^[[:space:]]*$/d')
if [ $list -eq 1 ]; then
  printf '%s\n' "$cases"
  exit 0
fi

if [ -n "$keep" ]; then
  work="$keep"
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/idgen-model.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

# check_case NAME MODEL EXPECT SWITCHES: builds and runs one case in
# $work/NAME.  Its table row goes to $work/NAME/row and, when it did not give
# what it expects, the reason to $work/NAME/why.
check_case() {
  local name=$1 model=$2 expect=$3 switches=$4
  local d="$work/$name" opts run
  rm -rf "$d"
  mkdir -p "$d"
  # shellcheck disable=SC2086 # the switches are words
  if ! (cd "$d" && spin -a $switches "$here/$model" >spin.out 2>&1); then
    printf '%-28s %-16s %-8s\n' "$name" "$expect" ERROR >"$d/row"
    { echo "  spin could not read $model:"; sed 's/^/  /' "$d/spin.out"; } >"$d/why"
    return 1
  fi
  case "$expect" in
    ok) opts="-DSAFETY -DCOLLAPSE" run="-m$depth" ;;
    *) opts="-DSAFETY -DBFS" run="" ;;
  esac
  # shellcheck disable=SC2086
  if ! $cc -O2 $opts -DMEMLIM="$memlim" -w -o "$d/pan" "$d/pan.c" 2>"$d/cc.out"; then
    printf '%-28s %-16s %-8s\n' "$name" "$expect" ERROR >"$d/row"
    { echo "  pan did not compile:"; sed 's/^/  /' "$d/cc.out"; } >"$d/why"
    return 1
  fi
  local t0 secs states errors violated cut="" result
  t0=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$d" && ./pan $run >pan.out 2>&1) || true
  secs=$(($(date +%s) - t0))
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$d/pan.out" | head -n 1)
  errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$d/pan.out" | head -n 1)
  violated=$(sed -n 's/.*assertion violated (\([a-z]*\)&&.*/\1/p' "$d/pan.out" | head -n 1)
  if grep -q "max search depth too small" "$d/pan.out"; then
    cut="depth limit $depth reached"
  fi
  if grep -qi "out of memory\|reached -DMEMLIM" "$d/pan.out"; then
    cut="memory limit $memlim MB reached"
  fi
  if [ "$expect" = ok ]; then
    if [ "${errors:-x}" = 0 ] && [ -z "$cut" ]; then result=holds; else result=FAILED; fi
  else
    if [ "${violated:-}" = "${expect#fail:}" ]; then result=caught; else result=MISSED; fi
  fi
  printf '%-28s %-16s %-8s %12s %8s\n' "$name" "$expect" "$result" "${states:-?}" "$secs" >"$d/row"
  if [ $result = holds ] || [ $result = caught ]; then
    return 0
  fi
  {
    if [ -n "$cut" ]; then
      echo "  $cut: the search is not complete (raise MODEL_MEMLIM or MODEL_DEPTH, or lower the bounds)"
    fi
    if [ -n "$violated" ]; then
      echo "  violated: $violated"
    fi
    grep -E "assertion violated|error|pan:" "$d/pan.out" | head -n 5 | sed 's/^/  /' || true
    if [ -n "$keep" ]; then
      echo "  trail: cd $d && spin -t -p $switches $here/$model"
    fi
  } >"$d/why"
  return 1
}

t_all=$(date +%s)
names=()
running=0
while read -r name model expect switches; do
  case "$name" in *"$pattern"*) ;; *) continue ;; esac
  case "$expect" in
    ok | fail:unique | fail:increasing | fail:fenced | fail:durable | fail:valid | fail:ordered | fail:counted) ;;
    *) echo "check.sh: $name: EXPECT must be ok or fail:PROP, not $expect" >&2; exit 2 ;;
  esac
  names+=("$name")
  check_case "$name" "$model" "$expect" "$switches" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done <<<"$cases"
wait || true

if [ ${#names[@]} -eq 0 ]; then
  echo "check.sh: no case matches '$pattern'" >&2
  exit 2
fi
failed=0
printf '%-28s %-16s %-8s %12s %8s\n' case expect result states seconds
for name in "${names[@]}"; do
  if [ -f "$work/$name/row" ]; then
    cat "$work/$name/row"
  else
    printf '%-28s %-16s %-8s\n' "$name" "" ERROR
    failed=$((failed + 1))
  fi
  if [ -s "$work/$name/why" ]; then
    failed=$((failed + 1))
    cat "$work/$name/why"
  fi
done
echo "${#names[@]} cases, $failed failed, $(($(date +%s) - t_all)) s (${jobs} at a time)"
[ $failed -eq 0 ]
