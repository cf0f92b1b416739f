#!/usr/bin/env bash
# image_test.sh SOURCE_DIR BUILD_DIR -- the daemon's OCI image
# (scripts/build-image.sh) and the Kubernetes example (dist/kubernetes/).
#
# Builds both flavours of the image into a temporary directory, then:
#   - skopeo inspect: the user is 65532:65532 (not root), /var/lib/idgen a
#     volume, ports 8080/tcp and 6380/tcp exposed, the entrypoint
#     `/usr/bin/idgen serve` with IDGEN_HTTP/IDGEN_RESP on 0.0.0.0, the
#     org.opencontainers.image.* labels (version, revision as git has them);
#   - umoci unpack: the root file system holds the user (/etc/passwd,
#     /etc/group), the state directory owned by it, no shell; the binary
#     run from it in a chroot as 65532 (ports the kernel picks, on
#     loopback), IDs over HTTP (curl) and RESP (redis-cli), /health, then
#     SIGTERM to its recorded PID and exit status 0.  The default image also
#     against a throwaway PostgreSQL (a role with a password given as
#     PGPASSWORD, as dist/kubernetes/idgen.yaml gives it; without it the
#     start is refused) and etcd: its libpq and libcurl closure is complete.
#     The static image: file: works, postgres:// is refused naming libpq;
#   - podman run, when podman can run a container here (storage of its own
#     in the temporary directory, driver vfs): the image as it is, in a
#     network namespace of the test's own, read-only, all capabilities
#     dropped; IDs on its default ports; podman stop, exit status 0; a second
#     container on the first one's volume takes up its registry.  When it
#     cannot, the line `skip podman: REASON` and the other checks still run;
#   - dist/kubernetes/*.yaml parsed (python3-yaml): the image name is the
#     one built, the container ports are the daemon's settings, the probes'
#     paths /health (liveness, startup) and /ready (readiness), the
#     securityContext, the state volume, the grace period against
#     shutdown_timeout_ms, the PodDisruptionBudget and Service selectors, no
#     password in any file; and `kubectl label --local` (no cluster) decodes
#     every object.
# Exits 77 (skipped) unless root with buildah, skopeo, umoci, curl,
# redis-cli and python3.  Removes everything it made on any exit: its
# daemons (by recorded PID), containers, volumes, images and storage.  Ends
# with "N passed, N failed".
# The functions below are called through traps and `check`.
# shellcheck disable=SC2317
set -u
src=$(cd "${1:?usage: image_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: image_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
# shellcheck source=tests/checks.sh
. "$src/tests/checks.sh"
need_root buildah skopeo umoci curl redis-cli python3 chroot unshare
python3 -c 'import yaml' 2>/dev/null || { echo "skipped: python3-yaml is missing"; exit 77; }

uid=65532
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-image-test.XXXXXX")
chmod 0711 "$tmp" # the throwaway PostgreSQL's user must reach its directory in it
# skopeo and podman unpack oci-archive: images into TMPDIR (else /var/tmp).
mkdir "$tmp/vartmp"
export TMPDIR=$tmp/vartmp
pids=()      # daemons started from an unpacked image (chroot)
holder=""    # the process holding the podman test's network namespace
pg_dir="" etcd_dir=""
pstore=$tmp/podman
podman_used=0
cleanup() {
  local p
  for p in "${pids[@]}"; do
    kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  if [ "$podman_used" = 1 ]; then
    pm rm -a -f -t 0 >/dev/null 2>&1
    pm volume rm -a -f >/dev/null 2>&1
    pm rmi -a -f >/dev/null 2>&1
    # A conmon left behind (it outlives podman), by the PID file it wrote.
    for p in "$pstore"/run/vfs-containers/*/userdata/conmon.pid; do
      [ -f "$p" ] && kill -KILL "$(cat "$p")" 2>/dev/null
    done
  fi
  [ -n "$holder" ] && kill -KILL "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  [ -n "$pg_dir" ] && "$src/tests/pg_server.sh" stop "$pg_dir" >/dev/null 2>&1
  [ -n "$etcd_dir" ] && "$src/tests/etcd_server.sh" stop "$etcd_dir" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the images ---------------------------------------------------------
archive=$tmp/idgen-image.oci.tar
archive_static=$tmp/idgen-image-static.oci.tar
t0=$SECONDS
if "$src/scripts/build-image.sh" --build "$build" --output "$archive" >"$tmp/build.log" 2>&1; then
  ok "build-image.sh: the default image ($((SECONDS - t0)) s)"
else
  tail -20 "$tmp/build.log"
  bad "build-image.sh: the default image"
  tally
  exit 1
fi
t0=$SECONDS
if "$src/scripts/build-image.sh" --static --build "$build" --output "$archive_static" \
  >"$tmp/build-static.log" 2>&1; then
  ok "build-image.sh --static ($((SECONDS - t0)) s)"
else
  tail -20 "$tmp/build-static.log"
  bad "build-image.sh --static"
fi
version=$("$build/image-dynamic/idgen" --version | awk '{print $2}')
image=localhost/idgen:$version
echo "image $image: $(du -k "$archive" | cut -f1) KiB archive; static: $(du -k "$archive_static" 2>/dev/null | cut -f1) KiB"

# ---- skopeo inspect -------------------------------------------------------
# check_config ARCHIVE REF: the image's configuration and name.
check_config() {
  local archive=$1 ref=$2 head
  head=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
  skopeo inspect --config "oci-archive:$archive" >"$tmp/config.json" || return 1
  tar -xOf "$archive" index.json >"$tmp/index.json" || return 1
  python3 - "$tmp/config.json" "$tmp/index.json" "$ref" "$version" "$head" "$uid" <<'EOF'
import json, re, sys
cfg, index, ref, version, head, uid = sys.argv[1:]
c = json.load(open(cfg))["config"]
problems = []
def want(what, got, expected):
    if got != expected:
        problems.append(f"{what}: {got!r}, expected {expected!r}")
want("User", c.get("User"), f"{uid}:{uid}")
want("ExposedPorts", sorted(c.get("ExposedPorts", {})), ["6380/tcp", "8080/tcp"])
want("Volumes", sorted(c.get("Volumes", {})), ["/var/lib/idgen"])
want("Entrypoint", c.get("Entrypoint"), ["/usr/bin/idgen", "serve"])
want("Cmd", c.get("Cmd"), None)
env = dict(e.split("=", 1) for e in c.get("Env", []))
want("IDGEN_HTTP", env.get("IDGEN_HTTP"), "0.0.0.0:8080")
want("IDGEN_RESP", env.get("IDGEN_RESP"), "0.0.0.0:6380")
want("StopSignal", c.get("StopSignal"), "SIGTERM")
labels = c.get("Labels", {})
want("title", labels.get("org.opencontainers.image.title"), "idgen")
want("version", labels.get("org.opencontainers.image.version"), version)
rev = labels.get("org.opencontainers.image.revision", "")
if not re.fullmatch(re.escape(head) + r"(-dirty)?", rev):
    problems.append(f"revision {rev!r} is not HEAD {head}")
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", labels.get("org.opencontainers.image.created", "")):
    problems.append(f"created {labels.get('org.opencontainers.image.created')!r} is not RFC 3339 UTC")
if not labels.get("org.opencontainers.image.description"):
    problems.append("no description label")
names = [m.get("annotations", {}).get("org.opencontainers.image.ref.name") for m in json.load(open(index))["manifests"]]
want("the archive's image names", names, [ref])
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
EOF
}
if check_config "$archive" "$image"; then ok "skopeo inspect: user $uid:$uid, volume, ports, entrypoint, env, labels, name $image"; else bad "skopeo inspect: the default image's configuration"; fi
if check_config "$archive_static" "$image-static"; then ok "skopeo inspect: the static image's configuration (name $image-static)"; else bad "skopeo inspect: the static image's configuration"; fi

# ---- umoci unpack ---------------------------------------------------------
# unpack ARCHIVE REF DIR: DIR/rootfs (owners kept: umoci as root).
unpack() {
  mkdir -p "$3.layout" && tar -xf "$1" -C "$3.layout" &&
    umoci unpack --image "$3.layout:$2" "$3" >"$3.log" 2>&1
}
rootfs=$tmp/bundle/rootfs
rootfs_static=$tmp/bundle-static/rootfs
check "umoci unpack: the default image" unpack "$archive" "$image" "$tmp/bundle"
check "umoci unpack: the static image" unpack "$archive_static" "$image-static" "$tmp/bundle-static"

# check_rootfs ROOTFS: the user, its state directory, and nothing to run but idgen.
check_rootfs() {
  local r=$1
  grep -qx "idgen:x:$uid:$uid:idgen daemon:/var/lib/idgen:/sbin/nologin" "$r/etc/passwd" &&
    grep -qx "idgen:x:$uid:" "$r/etc/group" &&
    [ "$(stat -c '%u:%g %a' "$r/var/lib/idgen")" = "$uid:$uid 700" ] &&
    [ -x "$r/usr/bin/idgen" ] && [ ! -e "$r/bin/sh" ] && [ ! -e "$r/usr/bin/sh" ] &&
    [ -z "$(find "$r" -perm /6000 -type f)" ] # no set-user-ID or set-group-ID file
}
check "rootfs: user and group idgen ($uid), /var/lib/idgen $uid:$uid 0700, no shell, no setuid file" check_rootfs "$rootfs"
check "rootfs (static): the same" check_rootfs "$rootfs_static"
check "rootfs (static): only idgen, the user, nsswitch.conf and the contents list" \
  test "$(cd "$rootfs_static" && find . -type f | sort | tr '\n' ' ')" = \
  "./etc/group ./etc/nsswitch.conf ./etc/passwd ./usr/bin/idgen ./usr/share/doc/idgen-image/contents.txt "
check "rootfs: libpq.so.5 and libcurl.so.4 with their packages' copyright files" \
  sh -c "ls '$rootfs'/lib/*/libpq.so.5 '$rootfs'/lib/*/libcurl.so.4 '$rootfs'/usr/share/doc/libpq5/copyright" \
  "'$rootfs'/usr/share/doc/libcurl4/copyright && grep -q '^libpq5 ' '$rootfs/usr/share/doc/idgen-image/packages.txt'"

# ---- the binary from the unpacked root, in a chroot ---------------------
chroot_bin=$(command -v chroot)
# start ROOTFS NAME [VAR=VALUE...]: idgen serve from ROOTFS as $uid, with
# only the given environment, HTTP and RESP on loopback ports the kernel
# picks; sets pid, http, resp; fails if the listeners are not up in 30 s.
start() {
  local r=$1 name=$2 end=$((SECONDS + 30))
  shift 2
  log=$tmp/$name.log
  env -i "$@" "$chroot_bin" --userspec=$uid:$uid "$r" /usr/bin/idgen serve \
    --http 127.0.0.1:0 --resp 127.0.0.1:0 --threads 1 --pid-file /tmp/idgen.pid >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  http="" resp=""
  while [ $SECONDS -lt $end ] && kill -0 "$pid" 2>/dev/null; do
    http=$(sed -n 's/.*event=listen proto=http addr=127.0.0.1:\([0-9]*\).*/\1/p' "$log")
    resp=$(sed -n 's/.*event=listen proto=resp addr=127.0.0.1:\([0-9]*\).*/\1/p' "$log")
    [ -n "$http" ] && [ -n "$resp" ] && [ -s "$r/tmp/idgen.pid" ] && return 0
    sleep 0.1
  done
  tail -5 "$log" | sed 's/^/  /'
  return 1
}
# stop ROOTFS: SIGTERM to the recorded PID (the one the daemon wrote, too),
# at most 30 s to exit; its status must be 0.
stop() {
  local r=$1 end=$((SECONDS + 30)) rc
  [ "$(cat "$r/tmp/idgen.pid" 2>/dev/null)" = "$pid" ] || echo "  pid file: $(cat "$r/tmp/idgen.pid" 2>/dev/null), started $pid"
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  [ "$rc" = 0 ] && grep -q 'event=exit code=0' "$log" || { echo "  exit status $rc"; tail -3 "$log" | sed 's/^/  /'; return 1; }
}
is_id() { [[ $1 =~ ^[0-9]{15,20}$ ]]; }
# ids_http / ids_resp: three IDs, increasing.
ids_http() {
  local out
  out=$(curl -sf --max-time 5 "http://127.0.0.1:$http/id?count=3") || return 1
  python3 -c 'import sys; v=[int(x) for x in sys.argv[1].split()]; sys.exit(not (len(v) == 3 and v == sorted(set(v))))' "$out"
}
ids_resp() {
  local out
  out=$(redis-cli -p "$resp" ID 3) || return 1
  python3 -c 'import sys; v=[int(x) for x in sys.argv[1].split()]; sys.exit(not (len(v) == 3 and v == sorted(set(v))))' "$out"
}
health() { [ "$(curl -s --max-time 5 "http://127.0.0.1:$http/health" | head -1)" = ok ]; }
# The Kubernetes readiness probe's route (dist/kubernetes/idgen.yaml).
ready() {
  local code
  code=$(curl -s -o "$tmp/ready.out" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$http/ready")
  if [ "$code" = 200 ]; then ok "$1: /ready 200"; else bad "$1: /ready $code $(head -c 200 "$tmp/ready.out")"; fi
}

# The default image, its default registry (file:/var/lib/idgen in the rootfs).
if start "$rootfs" chroot-file; then
  ok "chroot (default image): listening, HTTP :$http, RESP :$resp, as uid $uid"
  check "chroot: three IDs over HTTP (curl)" ids_http
  check "chroot: three IDs over RESP (redis-cli)" ids_resp
  check "chroot: PING" test "$(redis-cli -p "$resp" PING)" = PONG
  check "chroot: /health ok" health
  ready chroot
  check "chroot: leased from file:/var/lib/idgen" grep -q 'event=lease registry=file:/var/lib/idgen ' "$log"
  check "chroot: the registry's files in the state directory, owned by $uid" \
    test -z "$(find "$rootfs/var/lib/idgen" -mindepth 1 ! -uid $uid)" -a -n "$(ls -A "$rootfs/var/lib/idgen")"
  check "chroot: SIGTERM to the recorded PID, exit status 0" stop "$rootfs"
else
  bad "chroot (default image): the daemon did not start"
fi

# The same binary with postgres:// (libpq and its closure from the image).
if [ -x /usr/lib/postgresql/15/bin/initdb ] && command -v psql >/dev/null; then
  port=$(free_port)
  pg_dir=$tmp/pg
  pw=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  if "$src/tests/pg_server.sh" start "$pg_dir" "$port" >"$tmp/pg.uri" 2>"$tmp/pg.err" &&
    psql -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
      -c "CREATE ROLE idgen_app LOGIN PASSWORD '$pw'" -c "GRANT CREATE ON DATABASE postgres TO idgen_app" \
      >/dev/null 2>&1 &&
    sed -i '1i host all idgen_app 127.0.0.1/32 scram-sha-256' "$pg_dir/data/pg_hba.conf" &&
    runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$pg_dir/data" reload >/dev/null; then
    uri="postgres://idgen_app@127.0.0.1:$port/postgres"
    # Refused without the password: it is the role's, and PGPASSWORD gives it.
    if timeout 60 env -i "$chroot_bin" --userspec=$uid:$uid "$rootfs" /usr/bin/idgen serve --registry "$uri" \
      --http 127.0.0.1:0 --resp 127.0.0.1:0 --max-start-wait-ms 0 >"$tmp/nopw.log" 2>&1; then
      bad "chroot postgres://: started without a password"
    else
      check "chroot postgres://: refused without PGPASSWORD (password authentication)" \
        grep -q -i 'password' "$tmp/nopw.log"
    fi
    if start "$rootfs" chroot-pg IDGEN_REGISTRY="$uri" PGPASSWORD="$pw"; then
      ok "chroot postgres://: started with IDGEN_REGISTRY and PGPASSWORD (the Kubernetes example's way)"
      check "chroot postgres://: three IDs over HTTP" ids_http
      check "chroot postgres://: three IDs over RESP" ids_resp
      check "chroot postgres://: leased from $uri" grep -q "event=lease registry=$uri" "$log"
      check "chroot postgres://: SIGTERM, exit status 0" stop "$rootfs"
      check "chroot postgres://: the password in no log" sh -c "! grep -q -F '$pw' '$log' '$tmp/nopw.log'"
    else
      bad "chroot postgres://: the daemon did not start"
    fi
  else
    bad "a throwaway PostgreSQL on port $port: $(tail -2 "$tmp/pg.err")"
  fi
  "$src/tests/pg_server.sh" stop "$pg_dir" >/dev/null 2>&1
  pg_dir=""
else
  echo "skip postgres://: no PostgreSQL 15 (scripts/install-deps.sh)"
fi

# And etcd:// (libcurl and its closure).
if command -v etcd >/dev/null; then
  port=$(free_port 2) # etcd_server.sh takes the port and the next
  etcd_dir=$tmp/etcd
  if uri=$("$src/tests/etcd_server.sh" start "$etcd_dir" "$port" 2>"$tmp/etcd.err"); then
    if start "$rootfs" chroot-etcd IDGEN_REGISTRY="$uri"; then
      check "chroot etcd://: three IDs over RESP" ids_resp
      check "chroot etcd://: leased from $uri" grep -q "event=lease registry=$uri" "$log"
      check "chroot etcd://: SIGTERM, exit status 0" stop "$rootfs"
    else
      bad "chroot etcd://: the daemon did not start"
    fi
  else
    bad "a throwaway etcd on port $port: $(tail -2 "$tmp/etcd.err")"
  fi
  "$src/tests/etcd_server.sh" stop "$etcd_dir" >/dev/null 2>&1
  etcd_dir=""
else
  echo "skip etcd://: no etcd (scripts/install-deps.sh)"
fi

# The static image: file: only.
if start "$rootfs_static" chroot-static; then
  ok "chroot (static image): listening, HTTP :$http, RESP :$resp"
  check "chroot static: three IDs over HTTP" ids_http
  check "chroot static: three IDs over RESP" ids_resp
  check "chroot static: SIGTERM, exit status 0" stop "$rootfs_static"
else
  bad "chroot (static image): the daemon did not start"
fi
env -i "$chroot_bin" --userspec=$uid:$uid "$rootfs_static" /usr/bin/idgen serve \
  --registry postgres://u@127.0.0.1:1/db --http 127.0.0.1:0 --resp 127.0.0.1:0 >"$tmp/static-pg.log" 2>&1
rc=$?
check "chroot static: postgres:// refused (exit $rc), naming libpq.so.5" \
  sh -c "[ $rc = 1 ] && grep -q 'needs libpq.so.5' '$tmp/static-pg.log'"

# ---- podman ---------------------------------------------------------------
# pm ARGS...: podman with storage of its own (driver vfs, no daemon), in a
# mount namespace of its own where /var/lib is read-only, so that its
# blob-info cache (/var/lib/containers/cache, which no flag moves) stays in
# memory; crun's state under the temporary directory too (crun-here: crun
# --root DIR, since podman's --runtime-flag is not passed on to the clean-up
# that conmon runs, which would make /run/crun).  With
# PM_UNIFIED_OFF=1, also without the cgroup2 mount of a hybrid cgroup host
# (see below), in that namespace only.  Its /dev/shm is a directory of
# the test's (podman's lock file, libpod_lock, lives there, kept from one
# call to the next and removed with the rest).  Each call at most 300 s.
pm() {
  podman_used=1
  mkdir -p "$pstore/vartmp" "$pstore/shm"
  PM_SHM=$pstore/shm PM_UNIFIED_OFF=${PM_UNIFIED_OFF:-0} TMPDIR=$pstore/vartmp timeout 300 unshare --mount --propagation private -- sh -c '
    mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib || exit 125
    mount --bind "$PM_SHM" /dev/shm || exit 125
    if [ "$PM_UNIFIED_OFF" = 1 ]; then umount /sys/fs/cgroup/unified || exit 125; fi
    exec "$@"' sh podman --root "$pstore/root" --runroot "$pstore/run" --tmpdir "$pstore/tmp" \
    --storage-driver vfs --events-backend none --cgroup-manager cgroupfs \
    --runtime "$pstore/crun-here" "$@"
}
podman_checks() {
  local why out limits=() rc name=idgen-image-test-$$ vol first last
  if ! command -v podman >/dev/null || ! command -v crun >/dev/null; then
    echo "skip podman: podman or crun is not installed"
    return
  fi
  mkdir -p "$pstore"
  printf '#!/bin/sh\nexec %s --root %s/crun "$@"\n' "$(command -v crun)" "$pstore" >"$pstore/crun-here"
  chmod +x "$pstore/crun-here"
  if ! out=$(pm pull -q "oci-archive:$archive" 2>&1); then
    bad "podman pull oci-archive: $(tail -1 <<<"$out")"
    return
  fi
  out=$(pm images --format '{{.Repository}}:{{.Tag}}' 2>&1)
  check "podman: the image is named $image" grep -qx "$image" <<<"$out"
  # As a user would run it first.
  if out=$(pm run --rm --network none --entrypoint /usr/bin/idgen "$image" --version 2>&1); then
    echo "podman runs containers here as it is"
  else
    echo "podman as it is: $(tail -1 <<<"$out")"
    # What this machine needed (a sandbox's limits, not the image's): the
    # hard limits podman asks for by default (nofile 1048576, nproc
    # 4194304) need CAP_SYS_RESOURCE to raise; crun refuses a hybrid cgroup
    # layout whose cgroup2 mount has controllers enabled.
    limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
    if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] &&
      [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] &&
      [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
      export PM_UNIFIED_OFF=1
    fi
    if out=$(pm run --rm "${limits[@]}" --network none --entrypoint /usr/bin/idgen "$image" --version 2>&1); then
      echo "podman runs containers with ${limits[*]}${PM_UNIFIED_OFF:+, and without the cgroup2 mount of this hybrid cgroup host (in its own mount namespace)}"
    else
      why=$(tail -1 <<<"$out")
      echo "skip podman: $why"
      return
    fi
  fi
  # A network namespace of the test's own: the image's own listeners
  # (0.0.0.0:8080 and :6380) collide with nothing on the host.
  unshare --net -- sh -c 'ip link set lo up && exec sleep 600' &
  holder=$!
  innet() { nsenter --net="/proc/$holder/ns/net" "$@"; }
  # Not before the namespace is there (until then /proc/PID/ns/net is this
  # one's, the host's) and its loopback up.
  own_netns() {
    [ "$(readlink "/proc/$holder/ns/net")" != "$(readlink /proc/self/ns/net)" ] &&
      innet ip -o link show lo | grep -q 'state UNKNOWN\|state UP'
  }
  if ! retry 10 own_netns >/dev/null; then
    bad "a network namespace for the container (unshare --net)"
    return
  fi
  if ! out=$(pm run -d --name "$name" "${limits[@]}" --read-only --cap-drop ALL \
    --security-opt no-new-privileges --network "ns:/proc/$holder/ns/net" "$image" 2>&1); then
    bad "podman run -d: $(tail -1 <<<"$out")"
    return
  fi
  retry 30 innet curl -sf --max-time 2 http://127.0.0.1:8080/health >/dev/null &&
    ok "podman run (read-only, --cap-drop ALL): /health on 0.0.0.0:8080 as the image sets it" ||
    bad "podman run: no /health on port 8080: $(pm logs "$name" 2>&1 | tail -2)"
  check "podman run: /ready 200 (the readiness probe)" innet curl -sf --max-time 5 -o /dev/null http://127.0.0.1:8080/ready
  first=$(innet curl -sf --max-time 5 http://127.0.0.1:8080/id)
  check "podman: an ID over HTTP on port 8080" is_id "$first"
  last=$(innet redis-cli -p 6380 ID)
  check "podman: an ID over RESP on port 6380" is_id "$last"
  check "podman: runs as $uid:$uid" test "$(pm inspect "$name" --format '{{.Config.User}}')" = "$uid:$uid"
  vol=$(pm inspect "$name" --format '{{range .Mounts}}{{if eq .Destination "/var/lib/idgen"}}{{.Name}}{{end}}{{end}}')
  check "podman: /var/lib/idgen is a volume ($vol)" test -n "$vol"
  pm stop -t 15 "$name" >/dev/null 2>&1
  rc=$(pm inspect "$name" --format '{{.State.ExitCode}}')
  check "podman stop: SIGTERM, exit status 0 ($rc)" sh -c "[ '$rc' = 0 ] && grep -q 'event=exit code=0'" \
    <<<"$(pm logs "$name" 2>&1)"
  # A second container on the first one's volume takes its tuple up again.
  pm logs "$name" >"$tmp/podman1.log" 2>&1
  if out=$(pm run -d --name "$name-2" "${limits[@]}" --read-only --cap-drop ALL \
    --network "ns:/proc/$holder/ns/net" -v "$vol:/var/lib/idgen" "$image" 2>&1) &&
    retry 30 innet curl -sf --max-time 2 http://127.0.0.1:8080/health >/dev/null; then
    first=$(innet curl -sf --max-time 5 http://127.0.0.1:8080/id)
    check "podman: the second container's ID above the first's" python3 -c "import sys; sys.exit(not int('$first') > int('$last'))"
    pm logs "$name-2" >"$tmp/podman2.log" 2>&1
    check "podman: the same tuple from the volume's registry, its generation after the first's" \
      python3 - "$tmp/podman1.log" "$tmp/podman2.log" <<'EOF'
import re, sys
def lease(f):
    m = re.search(r"event=lease .*node=(\S+) .*generation=(\d+)", open(f).read())
    return m.group(1), int(m.group(2))
(n1, g1), (n2, g2) = lease(sys.argv[1]), lease(sys.argv[2])
print(n1, g1, n2, g2)
sys.exit(not (n1 == n2 and g2 > g1))
EOF
    pm stop -t 15 "$name-2" >/dev/null 2>&1
  else
    bad "podman: a second container on volume $vol: $(tail -1 <<<"$out")"
  fi
  pm rm -a -f -t 0 >/dev/null 2>&1
  pm volume rm -a -f >/dev/null 2>&1
  pm rmi -a -f >/dev/null 2>&1
  kill -KILL "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  holder=""
}
podman_checks

# ---- the Kubernetes example ------------------------------------------------
check_k8s() {
  python3 - "$src/dist/kubernetes" "$image" "$uid" <<'EOF'
import glob, os, re, sys
import yaml
kdir, image, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
docs = []
for f in sorted(glob.glob(os.path.join(kdir, "*.yaml"))):
    text = open(f).read()
    # No password anywhere: no Secret object, no credentials in a URI.
    need(not re.search(r"postgres(ql)?://[^/@\s]*:[^/@\s]*@", text), f"{f}: a password in a URI")
    docs += [(f, d) for d in yaml.safe_load_all(text) if d]
kinds = {(d["kind"], d["metadata"]["name"]) for _, d in docs}
need(kinds == {("Deployment", "idgen"), ("Service", "idgen"), ("PodDisruptionBudget", "idgen"),
               ("Deployment", "idgen-client-example")}, f"objects: {sorted(kinds)}")
need(not any(d["kind"] == "Secret" for _, d in docs), "a Secret in the files")
by = {(d["kind"], d["metadata"]["name"]): d for _, d in docs}
dep, svc, pdb = by[("Deployment", "idgen")], by[("Service", "idgen")], by[("PodDisruptionBudget", "idgen")]
pod = dep["spec"]["template"]["spec"]
labels = dep["spec"]["template"]["metadata"]["labels"]
sel = dep["spec"]["selector"]["matchLabels"]
need(all(labels.get(k) == v for k, v in sel.items()), "the Deployment's selector misses its pods")
c = [x for x in pod["containers"] if x["name"] == "idgen"][0]
need(c["image"] == image, f"image {c['image']!r}, built {image!r}")
env = {e["name"]: e for e in c.get("env", [])}
for name, e in env.items():
    if re.search(r"PASS|REGISTRY|TOKEN|SECRET", name):
        need("secretKeyRef" in e.get("valueFrom", {}), f"{name} is not from a Secret")
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
need(ports == {"http": 8080, "resp": 6380}, f"container ports {ports}")
for var, pname in (("IDGEN_HTTP", "http"), ("IDGEN_RESP", "resp")):
    v = env.get(var, {}).get("value", {"http": "0.0.0.0:8080", "resp": "0.0.0.0:6380"}[pname])
    need(v.rsplit(":", 1)[-1] == str(ports.get(pname)) and not v.startswith("127."),
         f"{var}={v} does not listen on the container port {pname}")
def probe(kind, path):
    p = c.get(kind, {}).get("httpGet", {})
    need(p.get("path") == path and p.get("port") in ("http", ports.get("http")),
         f"{kind}: {p}, expected GET {path} on the HTTP port")
probe("livenessProbe", "/health")
probe("readinessProbe", "/ready")
probe("startupProbe", "/health")
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
need(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "runAsNonRoot")
need(psc.get("runAsUser", csc.get("runAsUser")) == uid, f"runAsUser is not the image's {uid}")
need(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
need(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation")
need("ALL" in csc.get("capabilities", {}).get("drop", []), "capabilities: drop ALL")
mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
vols = {v["name"] for v in pod.get("volumes", [])}
need(mounts.get("/var/lib/idgen") in vols, "/var/lib/idgen (the image's VOLUME) is not mounted")
res = c.get("resources", {})
need(res.get("requests", {}).get("memory") and res.get("limits", {}).get("memory"), "memory request and limit")
shutdown_ms = int(env.get("IDGEN_SHUTDOWN_TIMEOUT_MS", {}).get("value", 5000))
grace = pod.get("terminationGracePeriodSeconds", 30)
need(grace * 1000 >= shutdown_ms + 12000, f"terminationGracePeriodSeconds {grace} < shutdown_timeout_ms {shutdown_ms} + 12 s")
need(grace * 1000 <= shutdown_ms + 30000, f"terminationGracePeriodSeconds {grace} far above shutdown_timeout_ms {shutdown_ms}")
need(svc["spec"]["selector"] == {k: labels[k] for k in svc["spec"]["selector"]}, "the Service's selector misses the pods")
sports = {p["name"]: (p["port"], p["targetPort"]) for p in svc["spec"]["ports"]}
need(sports == {"http": (8080, "http"), "resp": (6380, "resp")}, f"Service ports {sports}")
need(all(labels.get(k) == v for k, v in pdb["spec"]["selector"]["matchLabels"].items()), "the PDB's selector misses the pods")
mu, ma = pdb["spec"].get("maxUnavailable"), pdb["spec"].get("minAvailable")
need((mu is not None and mu >= 1) or (ma is not None and ma < dep["spec"]["replicas"]), "the PDB lets no pod go")
cl = by[("Deployment", "idgen-client-example")]["spec"]["template"]["spec"]["containers"][0]
cenv = {e["name"]: e.get("value") for e in cl.get("env", [])}
need(cenv.get("IDGEN_HOST") == svc["metadata"]["name"] and cenv.get("IDGEN_PORT") == str(sports["resp"][0]),
     f"the client's IDGEN_HOST/IDGEN_PORT {cenv} are not the Service's RESP port")
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
EOF
}
if check_k8s; then ok "dist/kubernetes: image $image, ports, probes /health and /ready, securityContext, volume, grace, selectors, no password"; else bad "dist/kubernetes: the manifests"; fi
if command -v kubectl >/dev/null; then
  # --local: decoded by kubectl itself, no API server asked (there is none).
  out=$(kubectl label --local -f "$src/dist/kubernetes/" idgen-test=1 -o name 2>&1 | sort | tr '\n' ' ')
  check "kubectl label --local decodes every object ($out)" test "$out" = \
    "deployment.apps/idgen deployment.apps/idgen-client-example poddisruptionbudget.policy/idgen service/idgen "
else
  echo "skip kubectl: not installed"
fi

tally
