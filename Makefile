# A thin wrapper over CMake for the README's two commands and CI.
#   make run    build, then start the daemon on its embedded defaults (the README's first command)
#   make test   build, then run every test (ctest)
#   make sanitize / make tsan / make fuzz   what CI runs besides
#   make image  the daemon's OCI image, $(BUILD)/idgen-image.oci.tar (buildah, as root;
#               IMAGE_FLAGS=--static: a static binary alone, registries file: and static only)
BUILD ?= build
JOBS  ?= 2
CMAKE_FLAGS ?=
# CI (which sets CI=true) treats warnings as errors.
ifeq ($(CI),true)
  CMAKE_FLAGS += -DIDGEN_WERROR=ON
endif

.PHONY: bench-public bench-public-node bench-public-daemon bench-seq bench-seq-claims bench-seq-peers bench-python bench-npm bench-leases screenshots image deb bench-peers test-cluster demo bench-serve bench-thrift bench-tls bench-registry bench-latency format model bench-js bench-all all deps build run test sanitize tsan fuzz bench install uninstall clean ci

all: build

deps:
	@scripts/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the daemon on its embedded defaults (HTTP 127.0.0.1:8080,
# RESP 127.0.0.1:6380) in the foreground; Ctrl-C stops it gracefully.  A
# user who may not use the host's default registry (/var/lib/idgen: root's,
# or shared with a group) would be refused: `make run` then names a
# registry of the user's own, and says so.
run: build
	@if $(BUILD)/idgen serve --check-config >/dev/null 2>&1; then \
	  exec $(BUILD)/idgen serve; \
	else \
	  echo "make run: the host's registry /var/lib/idgen is not this user's to use" \
	    "(idgen serve --check-config says why); this run leases from file:$$HOME/.local/state/idgen"; \
	  exec $(BUILD)/idgen serve --registry "file:$$HOME/.local/state/idgen"; \
	fi

# A tour of the command-line tool.
demo: build
	@echo '$$ idgen snowflake -n 3 --datacenter 1 --worker 7'
	@$(BUILD)/idgen snowflake -n 3 --datacenter 1 --worker 7 | tee $(BUILD)/run-ids.txt
	@echo '$$ idgen decode --json <those IDs>'
	@$(BUILD)/idgen decode --json - < $(BUILD)/run-ids.txt
	@echo '$$ idgen ulid -n 2 --monotonic; idgen uuid7'
	@$(BUILD)/idgen ulid -n 2 --monotonic | tee $(BUILD)/run-128.txt
	@$(BUILD)/idgen uuid7 | tee -a $(BUILD)/run-128.txt
	@echo '$$ idgen decode --json <those IDs>'
	@$(BUILD)/idgen decode --json - < $(BUILD)/run-128.txt
	@echo '$$ idgen plan --layout twitter'
	@$(BUILD)/idgen plan --layout twitter

test: build
	cd $(BUILD) && ctest --no-tests=error --output-on-failure -j $(JOBS)

# The multi-host fault test alone (tests/cluster/; part of `make test` too):
# daemons in network namespaces against PostgreSQL and etcd, under faults;
# each run's summary.txt and timeline.png are in $(BUILD)/cluster-BACKEND/.
# SOAK=SECONDS runs the mixed-fault phase that long (hours, for people who
# want them): make test-cluster SOAK=3600
SOAK ?= 0
test-cluster: build
ifeq ($(SOAK),0)
	cd $(BUILD) && ctest --no-tests=error --output-on-failure -L cluster
else
	for b in postgres etcd; do /usr/bin/python3 tests/cluster/cluster.py --idgen $(BUILD)/idgen \
	  --backend $$b --soak $(SOAK) --out $(BUILD)/cluster-$$b || exit 1; done
endif

# Unit and CLI tests under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize:
	cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=Debug \
	  -DIDGEN_SANITIZE=address,undefined -DIDGEN_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && IDGEN_TEST_SCALE=10 ctest --no-tests=error --output-on-failure -j $(JOBS)

# The concurrency tests under ThreadSanitizer.
tsan:
	cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=Debug \
	  -DIDGEN_SANITIZE=thread -DIDGEN_WERROR=ON >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && IDGEN_TEST_SCALE=5 ctest --no-tests=error --output-on-failure -L concurrency

# libFuzzer targets, each for FUZZ_SECONDS.
FUZZ_SECONDS ?= 20
fuzz:
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=Debug \
	  -DIDGEN_FUZZ=ON -DBUILD_TESTING=OFF -DIDGEN_WERROR=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	fuzz/run.sh build-fuzz/fuzz $(FUZZ_SECONDS)

# The registry protocol's models (model/*.pml), checked with spin: every
# property within the bounds of model/*.cases, and every mutation caught.
model:
	model/check.sh

# The house style (.clang-format) applied to every C file; the test `format` checks it.
format:
	scripts/format.sh

# The alert rules (dist/prometheus): promtool's checks and unit tests, no build
# needed (ctest -R ops.prometheus also runs them against a real Prometheus).
.PHONY: check-rules
check-rules:
	promtool check rules dist/prometheus/idgen.rules.yml
	promtool test rules dist/prometheus/idgen.rules.test.yml

bench: build
	$(BUILD)/idgen-bench

# The registry's costs: a bound generator against an unbound one (alternating
# runs), and the daemon's start with file: (docs/BENCHMARKS.md, the registry).
bench-registry: build
	$(BUILD)/idgen-bench --only bound --runs 9
	/usr/bin/python3 bench/start_bench.py $(BUILD)/idgen 21

# A sequence's hot path, idgen_seq_next on file:, against a bare
# atomic_fetch_add at 1 and 2 threads (bench/seq_bench.c).
bench-seq: build
	$(BUILD)/seq_bench

# Public IDs (docs/BENCHMARKS.md "Public IDs"): each idgen_public_* call,
# single and batched, against bare AES-256 (bench/public_bench.c); in Node,
# against hashids and sqids from npm (bench/public_node.sh); and the
# daemon's /id?format=public against /id (bench/public_daemon.sh).
bench-public: build
	$(BUILD)/public_bench

bench-public-node: build
	bench/public_node.sh $(BUILD)

bench-public-daemon: build
	bench/public_daemon.sh $(BUILD)/idgen

# Dense numbers as users make them today (PostgreSQL nextval, Redis INCR and
# INCRBY ranges) beside the daemon's SEQ, one client each (bench/seq_peers.sh).
bench-seq-peers: build
	bench/seq_peers.sh $(BUILD)/idgen

# A sequence's claims per second on file:, postgres:// and etcd://, and the
# adaptive step under a stepped rate (docs/BENCHMARKS.md "Sequences").
bench-seq-claims: build
	bench/seq_claims.sh $(BUILD)

# Leasing from the daemon (idgen serve --leases, idgen://) against the
# registry direct and against fetching every ID (docs/BENCHMARKS.md).
bench-leases: build
	bench/lease_bench.sh $(BUILD)

# /health and PING latency while requests wait for their tick (the loop
# never sleeps): a saturated twitter daemon, and a slow layout's batch.
bench-latency: build
	/usr/bin/python3 bench/latency_bench.py $(BUILD)/idgen

# docs/status-page*.png shot anew from daemons under load (about 2.5 minutes).
screenshots: build
	/usr/bin/python3 scripts/screenshots.py $(BUILD)/idgen

# The Debian packages idgen, libidgen0, libidgen-dev and postgresql-15-idgen in $(BUILD)/deb/
# (built on a copy of the tree; tests/deb_test.sh checks them with lintian).
deb:
	scripts/build-deb.sh $(BUILD)/deb

# The daemon's OCI image, FROM scratch (scripts/build-image.sh; docs/SERVE.md,
# "Containers and Kubernetes"; tests/image_test.sh checks it).
IMAGE_FLAGS ?=
image:
	scripts/build-image.sh --build $(BUILD) $(IMAGE_FLAGS)

# idgen beside yitter/IdGenerator (C, classic method) and skeeto/ulid-c in one
# process, with the clock_gettime and rdtsc+fetch_add floors (issue 16; where
# the peers' sources come from: bench/peers.sh --help; exit 77 if they are
# missing).  PEERS_FLAGS=--quick for a short run.
bench-peers: build
	bench/peers.sh --idgen-build $(BUILD) $(PEERS_FLAGS)

# The Node.js addon beside npm's ID packages (peers installed into a
# temporary folder), speed and correctness in one run.
# The npm package's install time (bench/npm_install_bench.sh): prebuilt, and
# built from its sources; medians of 3.
bench-npm: build
	bench/npm_install_bench.sh $(BUILD) 3

bench-js: build
	IDGEN_NODE_ADDON=$(abspath $(BUILD))/js/idgen.node IDGEN_WASM_DIR=$(abspath $(BUILD))/js/browser \
	  bench/js/run.sh $(BENCH_JS_FLAGS)

# The Python package beside the stdlib, python-ulid, uuid6 and snowflake-id
# (bench/python_bench.py: peers from PyPI into a venv under /tmp, or from
# their repositories' sources in IDGEN_PY_PEERS=DIR when PyPI is out of reach).
bench-python: build
	/usr/bin/python3 bench/python_bench.py $(BUILD)

# The Thrift service beside RESP and HTTP on one daemon, one load client.
bench-thrift: build
	bench/thrift_bench.sh $(BUILD)

# The daemon with and without TLS, side by side (about 6 minutes; --quick: 1).
bench-tls: build
	bench/tls_bench.sh $(BUILD)/idgen

# Every benchmark docs/BENCHMARKS.md quotes, one after another, outputs kept
# in /tmp/idgen-bench-all-$UID (about 20 minutes; BENCH_ALL_FLAGS=--quick: 5).
bench-all: build
	bench/all.sh $(BENCH_ALL_FLAGS) $(BUILD)

# The daemon beside redis-server and nginx (about 5 minutes; --quick: 30 s).
bench-serve: build
	bench/serve_bench.sh $(BUILD)/idgen

# make install [PREFIX=DIR] [DESTDIR=STAGING]: the binary, libraries, header,
# pkg-config files, man pages, bash completion and systemd unit (default
# prefix /usr/local).  make uninstall removes what the last install from
# $(BUILD) put there, and the directories it made that are empty again.
PREFIX ?=
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) $(if $(PREFIX),--prefix "$(PREFIX)")

uninstall:
	cmake -DBUILD="$(abspath $(BUILD))" -P dist/uninstall.cmake

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
	if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then \
	  $(MAKE) -s -C pg clean PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config; fi
