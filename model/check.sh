#!/bin/sh
# Checks the registry protocol's models with spin: every case in model/*.cases.
#
#   model/check.sh [--keep DIR] [--list] [NAME_PATTERN]
#
# A case line is `NAME MODEL EXPECT SWITCH...`:
#   MODEL   a file in model/ (net.pml, file.pml)
#   EXPECT  ok            every property holds: the search finishes with no
#                         error, within the depth and memory limits;
#           fail:PROP     spin must find a counterexample to property PROP
#                         (unique, increasing, fenced, durable): a mutation
#                         (one rule of the implementation removed) or a
#                         documented exception.
#   SWITCH  -DNAME[=VALUE] for spin's preprocessor (the bounds, MUT_*, ...).
# `ok` cases search depth-first with COLLAPSE compression; `fail:` cases
# breadth-first, which finds a shortest counterexample and does not get lost
# in a deep corner of the space.  Each model asserts its properties as
# `assert(PROP && (condition))` with a bit PROP = 1, so the name of the
# violated property is in pan's message.
#
# Exit status: 0 when every case gave what it expects, 1 otherwise, 2 on a
# usage or set-up error.  Needs spin and a C compiler.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
keep=""
list=0
pattern=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep="$2"; shift 2 ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) pattern="$1"; shift ;;
  esac
done

command -v spin >/dev/null || { echo "check.sh: spin is not installed (apt-get install -y spin)" >&2; exit 2; }
cc=${CC:-cc}
# pan's memory limit, MB, and its stack depth limit for depth-first runs.
memlim=${MODEL_MEMLIM:-4000}
depth=${MODEL_DEPTH:-1000000}

if [ -n "$keep" ]; then
  work="$keep"
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/idgen-model.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

cases=$(cat "$here"/*.cases | sed -e 's/#.*//' -e '/^[[:space:]]*$/d')
if [ $list -eq 1 ]; then
  printf '%s\n' "$cases"
  exit 0
fi

failed=0
ran=0
t_all=$(date +%s)
printf '%-28s %-16s %-8s %12s %8s\n' case expect result states seconds
while read -r name model expect switches; do
  case "$name" in *"$pattern"*) ;; *) continue ;; esac
  ran=$((ran + 1))
  d="$work/$name"
  mkdir -p "$d"
  # shellcheck disable=SC2086 # the switches are words
  if ! (cd "$d" && spin -a $switches "$here/$model" >spin.out 2>&1); then
    echo "$name: spin could not read $model:" >&2
    cat "$d/spin.out" >&2
    failed=$((failed + 1))
    continue
  fi
  case "$expect" in
    ok) opts="-DSAFETY -DCOLLAPSE" run="-m$depth" ;;
    fail:*) opts="-DSAFETY -DBFS" run="" ;;
    *) echo "$name: EXPECT must be ok or fail:PROP, not $expect" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  if ! $cc -O2 $opts -DMEMLIM="$memlim" -w -o "$d/pan" "$d/pan.c" 2>"$d/cc.out"; then
    echo "$name: pan did not compile:" >&2
    cat "$d/cc.out" >&2
    failed=$((failed + 1))
    continue
  fi
  t0=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$d" && ./pan $run >pan.out 2>&1) || true
  secs=$(($(date +%s) - t0))
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$d/pan.out" | head -n 1)
  errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$d/pan.out" | head -n 1)
  violated=$(sed -n 's/.*assertion violated (\([a-z]*\)&&.*/\1/p' "$d/pan.out" | head -n 1)
  cut=""
  grep -q "max search depth too small" "$d/pan.out" && cut="depth limit $depth reached"
  grep -qi "out of memory\|reached -DMEMLIM" "$d/pan.out" && cut="memory limit $memlim MB reached"
  case "$expect" in
    ok)
      if [ "${errors:-x}" = 0 ] && [ -z "$cut" ]; then
        result=holds
      else
        result=FAILED
      fi ;;
    fail:*)
      if [ "${violated:-}" = "${expect#fail:}" ]; then
        result=caught
      else
        result=MISSED
      fi ;;
  esac
  printf '%-28s %-16s %-8s %12s %8s\n' "$name" "$expect" "$result" "${states:-?}" "$secs"
  case "$result" in
    FAILED | MISSED)
      failed=$((failed + 1))
      [ -n "$cut" ] && echo "  $cut: the search is not complete (raise MODEL_MEMLIM or MODEL_DEPTH, or lower the bounds)"
      [ -n "$violated" ] && echo "  violated: $violated"
      grep -E "assertion violated|error|pan:" "$d/pan.out" | head -n 5 | sed 's/^/  /'
      [ -n "$keep" ] && echo "  trail: cd $d && spin -t -p $switches $here/$model" ;;
  esac
done <<EOF
$cases
EOF

if [ $ran -eq 0 ]; then
  echo "check.sh: no case matches '$pattern'" >&2
  exit 2
fi
echo "$ran cases, $failed failed, $(($(date +%s) - t_all)) s"
[ $failed -eq 0 ]
