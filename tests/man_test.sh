#!/usr/bin/env bash
# The man pages made at build time (scripts/gen-man.py): each renders with
# `man -l` and without a groff warning, has its sections, and holds what it
# is made from, so that a page cannot fall behind its sources:
#   idgen(1)        every command of `idgen --help`, every flag of each
#                   command's --help
#   idgen-serve(1)  every setting of `idgen serve --settings-markdown` (flag,
#                   environment variable, config key), every route the HTTP
#                   code matches (src/server/serve_http.c), the signals
#   libidgen(3)     every function idgen.h declares (IDGEN_API), every
#                   IDGEN_E* code
# Usage: man_test.sh MAN_DIR IDGEN SOURCE_DIR.  Ends with "N passed, N failed";
# 77 (skipped) when the pages were not made (no python3 at build time).
set -u
man_dir=${1:?usage: man_test.sh MAN_DIR IDGEN SOURCE_DIR}
idgen=${2:?}
src=${3:?}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

pages="idgen.1 idgen-serve.1 libidgen.3"
for p in $pages; do
  if [ ! -f "$man_dir/$p" ]; then
    echo "man_test: $man_dir/$p was not made (python3 missing at build time?): skipped"
    exit 77
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- each page renders, without warnings, with its sections ----------------
for p in $pages; do
  warn=$(groff -man -Tutf8 -ww -z "$man_dir/$p" 2>&1)
  [ -z "$warn" ] && ok || no "$p: groff warnings: $warn"
  if MANWIDTH=80 man -l "$man_dir/$p" >"$tmp/$p.txt" 2>"$tmp/$p.err" && [ ! -s "$tmp/$p.err" ]; then
    ok
  else
    no "$p: man -l failed: $(cat "$tmp/$p.err")"
  fi
  [ "$(wc -l <"$tmp/$p.txt")" -gt 40 ] && ok || no "$p: renders to $(wc -l <"$tmp/$p.txt") lines"
  # Nothing escaped wrongly: no roff left in the text, and ASCII hyphens in flags.
  grep -nE '\\f[BIRP]|\\-|\\\(|\\e' "$tmp/$p.txt" >"$tmp/roff" && no "$p: roff in the text: $(head -3 "$tmp/roff")" || ok
done
# One wide rendering to search in: no line breaks inside what is looked for.
for p in $pages; do MANWIDTH=250 man -l "$man_dir/$p" 2>/dev/null >"$tmp/$p.wide"; done

sections() { # PAGE SECTION...
  local p=$1 s
  shift
  for s in "$@"; do
    grep -qx "$s" "$tmp/$p.txt" && ok || no "$p: no section $s"
  done
}
sections idgen.1 NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS "EXIT STATUS" "SEE ALSO"
sections idgen-serve.1 NAME SYNOPSIS DESCRIPTION OPTIONS SETTINGS HTTP RESP THRIFT SIGNALS \
  SYSTEMD "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"
sections libidgen.3 NAME LIBRARY SYNOPSIS DESCRIPTION "RETURN VALUE" EXAMPLES "SEE ALSO"

has() { # PAGE WORD WHAT: WORD appears in PAGE's text
  grep -qF -- "$2" "$tmp/$1.wide" && ok || no "$1: no $3 \"$2\""
}

# ---- idgen(1): every command and its flags -----------------------------------
commands=$("$idgen" --help | awk '/^Commands:/ { f = 1; next } f && /^$/ { exit } f { print $1 }')
[ "$(echo "$commands" | wc -w)" -ge 8 ] && ok || no "idgen --help lists only: $commands"
for c in $commands; do
  grep -qx "   idgen $c" "$tmp/idgen.1.wide" && ok || no "idgen.1: no subsection \"idgen $c\""
  [ "$c" = serve ] && continue # its flags are idgen-serve(1)'s
  for f in $("$idgen" "$c" --help | grep -oE '^ {1,8}(-[A-Za-z0-9], )?--[a-z][a-z0-9-]*' |
    grep -oE -- '--[a-z][a-z0-9-]*$'); do
    has idgen.1 "$f" "flag of idgen $c:"
  done
done
has idgen.1 "idgen-serve(1)" "reference"
has idgen.1 "libidgen(3)" "reference"

# ---- idgen-serve(1): every setting, route and signal -------------------------
keys=$("$idgen" serve --settings-markdown | sed 's/\\|//g' | awk -F'|' 'NR > 2 { gsub(/[ `]/, "", $4); print $4 }')
[ "$(echo "$keys" | wc -w)" -ge 25 ] && ok || no "--settings-markdown has only: $keys"
for k in $keys; do
  has idgen-serve.1 "config key: $k." "setting"
  has idgen-serve.1 "--$(echo "$k" | tr _ -)" "flag of setting $k:"
  has idgen-serve.1 "IDGEN_$(echo "$k" | tr a-z A-Z)" "variable of setting $k:"
done
for f in $("$idgen" serve --help | grep -oE '^ {1,8}(-[A-Za-z0-9], )?--[a-z][a-z0-9-]*' |
  grep -oE -- '--[a-z][a-z0-9-]*$'); do
  has idgen-serve.1 "$f" "flag of idgen serve:"
done
# The routes: each path the HTTP code compares against, and /decode/.
routes=$(grep -oE 'str_eq\(path, "/[^"]*"\)|"/decode/"' "$src/src/server/serve_http.c" |
  grep -oE '"/[^"]*"' | tr -d '"' | sort -u)
[ "$(echo "$routes" | wc -w)" -ge 7 ] && ok || no "found only these routes in serve_http.c: $routes"
for r in $routes; do
  grep -qE "(^|[ ,(])$r([ ,;:?)]|ID|$)" "$tmp/idgen-serve.1.wide" && ok ||
    no "idgen-serve.1: route $r (src/server/serve_http.c) is not described"
done
for s in SIGTERM SIGINT SIGHUP Type=notify READY=1 /var/lib/idgen "group idgen"; do
  has idgen-serve.1 "$s" "word"
done

# ---- libidgen(3): every function and error code ------------------------------
synopsis=$(awk '/^SYNOPSIS$/ { f = 1; next } /^DESCRIPTION$/ { exit } f' "$tmp/libidgen.3.wide")
n=0
for fn in $(grep -oE '^IDGEN_API[^(]*\b(idgen_[a-z0-9_]+)\(' "$src/include/idgen.h" |
  grep -oE 'idgen_[a-z0-9_]+\($' | tr -d '('); do
  n=$((n + 1))
  grep -qE "\\b$fn\\(" <<<"$synopsis" && ok || no "libidgen.3: $fn (idgen.h) is not in SYNOPSIS"
  has libidgen.3 "$fn(" "function"
done
[ "$n" -ge 60 ] && ok || no "found only $n functions in idgen.h"
for e in $(grep -oE '^ +XX\(E[A-Z]+,' "$src/include/idgen.h" | grep -oE 'E[A-Z]+'); do
  grep -qE "^ +IDGEN_$e \(-[0-9]+\)" "$tmp/libidgen.3.wide" && ok ||
    no "libidgen.3: IDGEN_$e is not in RETURN VALUE"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
