#!/usr/bin/env bash
# Installs the Debian packages that idgen's build, tests, sanitizers and fuzz
# targets need.  Idempotent: does nothing (not even apt-get update) when every
# package is already there.  Run as root, or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake pkg-config   # the build
  libjansson-dev                     # JSON output of the CLI
  libssl-dev                         # OpenSSL's DRBG: ULID and UUIDv7 random bits
  libcmocka-dev                      # unit tests
  clang-14 libclang-rt-14-dev        # ASan/UBSan/TSan runtimes and libFuzzer
  clang-format-14                    # the house style (.clang-format; the test `format`)
  python3                            # the CLI tests' JSON checks
  python3-dev python3-venv python3-pip  # the Python package (python/): its headers, pip install into a venv
  python3-pytest mypy                # the Python package's test (python.package) and its stubs' check
  curl redis-tools python3-redis     # the daemon's tests: real HTTP and Redis clients
  python3-prometheus-client          # the daemon's tests: a real parser for /metrics
  python3-hiredis libhiredis-dev     # the client matrix (serve.clients): redis-py's hiredis parser, hiredis in C
  redis-server wrk nginx-light       # bench/serve_bench.sh: the peers, and an HTTP load tool
  faketime                           # clock steps under a running daemon
  spin                               # make model: the registry protocol's model checker
  libpq-dev                          # the postgres:// registry
  libcurl4-openssl-dev               # the etcd:// registry (etcd's JSON gateway) and idgen://
  etcd-server etcd-client openssl    # a throwaway etcd cluster (and TLS certificates) for the registry's tests
  postgresql                         # a throwaway PostgreSQL server for the registry's tests
  postgresql-server-dev-15           # CREATE EXTENSION idgen (pg/): PGXS and the server headers
  thrift-compiler python3-thrift     # the Thrift service's tests: the real Apache Thrift client
  iproute2 nftables                  # the cluster test: hosts in network namespaces, partitions
  python3-matplotlib                 # the cluster test's timeline (PNG)
  chromium python3-websocket         # the status page in a real browser (DevTools protocol)
  optipng                            # make screenshots: the status page's PNGs, made smaller (lossless)
  lld-14 wasi-libc libclang-rt-14-dev-wasm32  # the WebAssembly build (js/wasm) for browsers
  man-db groff-base                  # the man pages, rendered by man -l in the tests
  dpkg-dev debhelper lintian         # the Debian packages (dpkg-buildpackage, lintian clean)
  postgresql-server-dev-all          # the Debian package postgresql-15-idgen (pg_buildext, debian/control.in)
  buildah skopeo umoci               # the OCI image (make image) and its test: build, inspect, unpack
  podman crun                        # the image's test: podman run (skipped where podman cannot run one)
  python3-yaml                       # the image's test: the Kubernetes manifests (dist/kubernetes/) parsed
  prometheus                         # the alert rules (dist/prometheus): promtool, and a real Prometheus in ops.prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# Node.js and npm for the JavaScript clients' test (ioredis and node-redis
# against the daemon, installed from npm at test time): Debian's packages,
# unless a node and an npm are there already (NodeSource's nodejs carries its
# own npm, which Debian's npm package would conflict with).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# kubectl for the image's test (`kubectl label --local` decodes
# dist/kubernetes/; no cluster): Debian's, unless a kubectl is there already
# (the Google Cloud SDK's owns /usr/bin/kubectl too).
command -v kubectl >/dev/null || missing+=(kubernetes-client)
# TypeScript's compiler for the declarations' check (ctest js.types).
command -v tsc >/dev/null || missing+=(node-typescript)
# Node-API's headers for the Node.js addon (js/), from npm: Debian's
# libnode-dev does not install beside NodeSource's nodejs.
napi_headers() {
  local root
  root=$(npm root -g 2>/dev/null) && [ -f "$root/node-api-headers/include/node_api.h" ]
}
need_napi=0
command -v npm >/dev/null && napi_headers || need_napi=1
[ ${#missing[@]} -eq 0 ] && [ $need_napi -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! napi_headers; then
  echo "install-deps: installing node-api-headers (npm)" >&2
  $sudo npm install -g --no-audit --no-fund node-api-headers@1 >/dev/null
fi
