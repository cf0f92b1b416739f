#!/usr/bin/env bash
# bench/peers.sh: idgen beside the peers issue 16 names, re-measured by one command.
#
#   bench/peers.sh [--yitter DIR] [--skeeto DIR] [--idgen-build DIR] [--build-dir DIR]
#                  [--peer-cflags FLAGS] [--runs N] [--seconds S] [--quick]
#                  [--only one|threaded] [--cpu N]
#
# Builds, in --build-dir (default /tmp/idgen-peers-$UID), from the peers' own public sources:
#   yitter/IdGenerator's C port (https://github.com/yitter/IdGenerator, directory C/source)
#   skeeto/ulid-c                (https://github.com/skeeto/ulid-c)
# each at --peer-cflags (default -O3), then links bench/peers.c against both and against the
# project's static libidgen (DIR/libidgen.a of --idgen-build, default build/; configured and
# built, target idgen_static only, if missing), and runs it: one process, interleaved rounds,
# median of --runs (default 7) runs of --seconds (default 0.5) each. --quick: 3 runs of 0.2 s.
# It runs twice: in a process with one thread, where glibc's mutexes (yitter's) skip their
# atomic instructions, then in one that has started a second thread, as a server has
# (--only one|threaded: just that one). Both runs are pinned to one CPU, --cpu (default the last
# online one): on this VM the two vCPUs differ (skeeto's call costs 13 ns on one and 21 ns on the
# other), and a run that the scheduler moves from one to the other compares nothing.
# Nothing of the peers is copied into this repository.
#
# --yitter and --skeeto (or $IDGEN_PEER_YITTER and $IDGEN_PEER_SKEETO) take a checkout (a git
# work tree or an unpacked archive; for yitter the repository's root or its C/source) or a bare
# git directory (its HEAD is used). Defaults: the snapshots in /work/.mirror, if present.
#
# Prints the machine (CPU, cores, clocksource, fast clock, SIMD codecs), a table per
# contender (with the monotonic ULID on the scalar codecs too, where the CPU has AVX-512 VBMI:
# what a CPU without it gets), a markdown table for docs/BENCHMARKS.md and `peers.*` lines
# for scripts. Exit status: 0 done (targets are reported, not enforced), 1 a build or a
# sanity check failed, 2 bad usage,
# 77 a peer's sources are missing (skip).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
yitter=${IDGEN_PEER_YITTER:-/work/.mirror/yitter+IdGenerator/repo}
skeeto=${IDGEN_PEER_SKEETO:-/work/.mirror/skeeto+ulid-c/repo}
idgen_build=${IDGEN_BUILD:-$repo/build}
build_dir=/tmp/idgen-peers-$(id -u)
peer_cflags=-O3
cc=${CC:-cc}
runs=7
seconds=0.5
only=''
cpu=$(( $(nproc) - 1 ))

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; }
die() { echo "peers.sh: $*" >&2; exit 1; }
need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "peers.sh: $1 needs a value" >&2; exit 2; }; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --yitter) need_arg "$@"; yitter=$2; shift 2 ;;
    --skeeto) need_arg "$@"; skeeto=$2; shift 2 ;;
    --idgen-build) need_arg "$@"; idgen_build=$2; shift 2 ;;
    --build-dir) need_arg "$@"; build_dir=$2; shift 2 ;;
    --peer-cflags) need_arg "$@"; peer_cflags=$2; shift 2 ;;
    --runs) need_arg "$@"; runs=$2; shift 2 ;;
    --seconds) need_arg "$@"; seconds=$2; shift 2 ;;
    --quick) runs=3; seconds=0.2; shift ;;
    --cpu) need_arg "$@"; cpu=$2; shift 2
           [[ $cpu =~ ^[0-9]+$ ]] || { echo "peers.sh: --cpu takes a CPU number" >&2; exit 2; } ;;
    --only) need_arg "$@"; only=$2; shift 2
            [[ $only == one || $only == threaded ]] ||
              { echo "peers.sh: --only takes one or threaded" >&2; exit 2; } ;;
    -h|--help) usage; exit 0 ;;
    *) echo "peers.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

missing() {
  cat >&2 <<EOF
peers.sh: $1's sources not found at '$2'.
Bring them (the script never downloads anything itself), then point the script at them:
  git clone https://github.com/yitter/IdGenerator /tmp/IdGenerator
  git clone https://github.com/skeeto/ulid-c /tmp/ulid-c
  bench/peers.sh --yitter /tmp/IdGenerator --skeeto /tmp/ulid-c
(or set IDGEN_PEER_YITTER and IDGEN_PEER_SKEETO)
EOF
  exit 77
}

mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)

# resolve NAME DIR SUBDIR PROBE: sets src (the directory holding PROBE) and rev (the commit).
resolve() {
  local name=$1 dir=$2 sub=$3 probe=$4
  src='' rev=''
  if [[ -n $sub && -f $dir/$sub/$probe ]]; then
    src=$(cd "$dir/$sub" && pwd)
  elif [[ -f $dir/$probe ]]; then
    src=$(cd "$dir" && pwd)
  elif [[ -d $dir ]] && git --git-dir="$dir" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    rev=$(git --git-dir="$dir" rev-parse HEAD)
    rm -rf "$build_dir/$name-src"
    mkdir -p "$build_dir/$name-src"
    git --git-dir="$dir" archive HEAD | tar -x -C "$build_dir/$name-src"
    if [[ -n $sub && -f $build_dir/$name-src/$sub/$probe ]]; then
      src=$build_dir/$name-src/$sub
    elif [[ -f $build_dir/$name-src/$probe ]]; then
      src=$build_dir/$name-src
    else
      missing "$name" "$dir"
    fi
    return
  else
    missing "$name" "$dir"
  fi
  rev=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
  if git -C "$src" rev-parse --git-dir >/dev/null 2>&1 &&
     [[ -n $(git -C "$src" status --porcelain -- . 2>/dev/null) ]]; then
    rev="$rev (modified)"
  fi
}

resolve yitter "$yitter" C/source idgen/SnowWorkerM2.c
ysrc=$src yrev=$rev
resolve skeeto "$skeeto" "" ulid.c
ksrc=$src krev=$rev

# The project's static library.
lib=$idgen_build/libidgen.a
if [[ ! -f $lib ]]; then
  echo "peers.sh: $lib missing: building target idgen_static in $idgen_build" >&2
  if [[ ! -f $idgen_build/CMakeCache.txt ]]; then
    cmake -S "$repo" -B "$idgen_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null ||
      die "cmake configure failed"
  fi
  cmake --build "$idgen_build" --target idgen_static -j 2 >&2 || die "building idgen_static failed"
  [[ -f $lib ]] || die "no $lib after the build"
fi
newer=$(find "$repo/src/core" "$repo/include" -name '*.[ch]' -newer "$lib" 2>/dev/null | head -n 1)
if [[ -n $newer ]]; then
  echo "peers.sh: warning: $newer is newer than $lib (rebuild it: make build," \
       "or cmake --build $idgen_build --target idgen_static)" >&2
fi

crypto=$(pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
# The library's build options that change what core_int.h inlines into the
# harness: the vDSO trick (off by default) needs its define here too.
defs=()
if grep -q '^IDGEN_VDSO_DIRECT:BOOL=ON' "$idgen_build/CMakeCache.txt" 2>/dev/null; then
  defs+=(-DIDGEN_VDSO_DIRECT)
fi

# The peers, as they are: their own files, compiled here; warnings are theirs (-w).
echo "peers.sh: building the peers and the harness in $build_dir" >&2
rm -rf "$build_dir/obj"
mkdir -p "$build_dir/obj/yitter" "$build_dir/obj/skeeto"
for f in idgen/IdGenOptions.c idgen/IdGenerator.c idgen/SnowWorkerM1.c idgen/SnowWorkerM2.c \
         YitIdHelper.c; do
  # shellcheck disable=SC2086  # FLAGS is a list of words
  "$cc" -std=gnu11 $peer_cflags -w -c "$ysrc/$f" -o "$build_dir/obj/yitter/$(basename "$f" .c).o" ||
    die "compiling yitter's $f failed"
done
rm -f "$build_dir/libyitter.a"
ar rcs "$build_dir/libyitter.a" "$build_dir"/obj/yitter/*.o
# shellcheck disable=SC2086
"$cc" -std=c99 $peer_cflags -w -c "$ksrc/ulid.c" -o "$build_dir/obj/skeeto/ulid.o" ||
  die "compiling skeeto's ulid.c failed"
rm -f "$build_dir/libulid.a"
ar rcs "$build_dir/libulid.a" "$build_dir/obj/skeeto/ulid.o"

# Ours: -O2 as the project's RelWithDebInfo; the peers' headers as system headers.
# shellcheck disable=SC2086
"$cc" -std=gnu11 -O2 -g -Wall -Wextra "${defs[@]}" -I"$repo/include" -I"$repo/src/core" \
  -isystem "$ysrc" -isystem "$ksrc" \
  "$repo/bench/peers.c" -o "$build_dir/peers" \
  "$build_dir/libyitter.a" "$build_dir/libulid.a" "$lib" $crypto -pthread ||
  die "building bench/peers.c failed"

cd "$build_dir"
args=(--runs "$runs" --seconds "$seconds" --yitter-rev "$yrev" --skeeto-rev "$krev"
      --peer-cflags "$peer_cflags")
pin=()
if command -v taskset >/dev/null; then
  pin=(taskset -c "$cpu")
else
  echo "peers.sh: taskset not found (util-linux): the runs are not pinned" >&2
fi
if [[ $only != threaded ]]; then
  "${pin[@]}" "$build_dir/peers" "${args[@]}"
fi
if [[ -z $only ]]; then
  printf '\n'
fi
if [[ $only != one ]]; then
  "${pin[@]}" "$build_dir/peers" --threaded "${args[@]}"
fi
