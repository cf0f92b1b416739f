# cmake/sources.cmake -- the core's one source list, and the objects every
# build of it links: the top-level CMakeLists.txt includes it for the
# libraries, the command, the daemon and the Node.js addon, and so does the
# WebAssembly build (the same project configured with
# cmake/wasm32-wasi.cmake).  A new build of the core takes these lists and
# options, never a list of file names of its own.
#
#   IDGEN_CORE_SOURCES          portable: no threads, no files, no sockets
#   IDGEN_CORE_KEEPER_SOURCES   the lease keeper and the cached generator,
#                               which run threads (IDGEN_KEEPER=ON); with
#                               IDGEN_KEEPER=OFF src/core/keeper_none.c
#                               stands in for them
#   IDGEN_CORE_PLATFORM_SOURCES one file per platform, as libuv keeps them:
#                               the random source and fork detection
#   IDGEN_CORE_PUBLIC_SOURCES   public IDs (FF1 on libcrypto's AES, key
#                               files): native builds only, not WASI (no
#                               libcrypto there)
#   IDGEN_REGISTRY_SOURCES      libidgen-registry's (src/registry), etcd://
#                               with IDGEN_ETCD=ON only; native builds
#                               only (the npm package's standalone addon
#                               build, js/scripts/addon.cmake, takes it too)
#   src/core/clock_vdso.c       with IDGEN_VDSO_DIRECT=ON only (off by
#                               default): the vDSO's clock_gettime called
#                               directly
#
# idgen_objects: the core's objects (libidgen's, shared and static alike).
# idgen_registry_objects: libidgen-registry's (native builds: it needs the
# LIBPQ_, LIBCURL_ and JANSSON_ include folders that pkg-config found).
# idgen_decode: reading an ID back and its JSON (src/common/decode.c), one
# writer for `idgen decode --json`, the daemon, the addon, idgen.wasm and
# the PostgreSQL extension (whose PGXS build compiles this same file).
set(IDGEN_CORE_SOURCES
  src/core/errors.c
  src/core/compat.c
  src/core/timefmt.c
  src/core/layout.c
  src/core/clock.c
  src/core/bias.c
  src/core/snowflake.c
  src/core/random.c
  src/core/uuid.c
  src/core/ulid.c
  src/core/simd.c
  src/core/tzif.c
  src/core/seqfmt.c)
set(IDGEN_CORE_KEEPER_SOURCES
  src/core/lease_keeper.c
  src/core/cached.c)
set(IDGEN_CORE_PUBLIC_SOURCES
  src/core/ff1.c
  src/core/public.c
  src/core/public_keys.c)
if(CMAKE_SYSTEM_NAME STREQUAL "WASI")
  set(IDGEN_CORE_PLATFORM_SOURCES src/core/platform_wasm.c)
else()
  set(IDGEN_CORE_PLATFORM_SOURCES src/core/platform_posix.c)
endif()

set(IDGEN_REGISTRY_SOURCES
  src/registry/registry.c
  src/registry/bounded.c
  src/registry/space.c
  src/registry/seq_record.c
  src/registry/seq.c
  src/registry/registry_file.c
  src/registry/registry_pg.c
  src/registry/registry_idgen.c
  src/registry/seq_store.c
  src/registry/host.c)
if(IDGEN_ETCD)
  list(APPEND IDGEN_REGISTRY_SOURCES src/registry/registry_etcd.c)
endif()

set(_core ${IDGEN_CORE_SOURCES} ${IDGEN_CORE_PLATFORM_SOURCES})
if(NOT CMAKE_SYSTEM_NAME STREQUAL "WASI")
  list(APPEND _core ${IDGEN_CORE_PUBLIC_SOURCES})
endif()
# Speed tricks: each in a file of its own, behind an option that is off by
# default (docs/CONTRIBUTING.md, "Growing").
if(IDGEN_VDSO_DIRECT)
  list(APPEND _core src/core/clock_vdso.c)
endif()
if(IDGEN_KEEPER)
  list(APPEND _core ${IDGEN_CORE_KEEPER_SOURCES})
else()
  list(APPEND _core src/core/keeper_none.c)
endif()
# Position-independent for the shared libraries and the addon; WebAssembly
# links one module, statically.
if(CMAKE_SYSTEM_NAME STREQUAL "WASI")
  set(_pic OFF)
else()
  set(_pic ON)
endif()
add_library(idgen_objects OBJECT ${_core})
target_include_directories(idgen_objects PUBLIC include PRIVATE src/core ${LIBCRYPTO_INCLUDE_DIRS})
target_compile_definitions(idgen_objects PRIVATE IDGEN_BUILDING
                           PUBLIC $<$<BOOL:${IDGEN_VDSO_DIRECT}>:IDGEN_VDSO_DIRECT>)
set_target_properties(idgen_objects PROPERTIES POSITION_INDEPENDENT_CODE ${_pic}
                      C_VISIBILITY_PRESET hidden)

if(NOT CMAKE_SYSTEM_NAME STREQUAL "WASI")
  add_library(idgen_registry_objects OBJECT ${IDGEN_REGISTRY_SOURCES})
  target_include_directories(idgen_registry_objects PUBLIC include
                             PRIVATE src/core src/registry ${LIBPQ_INCLUDE_DIRS}
                             ${LIBCURL_INCLUDE_DIRS} ${JANSSON_INCLUDE_DIRS})
  target_compile_definitions(idgen_registry_objects PRIVATE IDGEN_BUILDING
                             $<$<NOT:$<BOOL:${IDGEN_ETCD}>>:IDGEN_NO_ETCD>)
  set_target_properties(idgen_registry_objects PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
endif()

add_library(idgen_decode OBJECT src/common/decode.c)
target_include_directories(idgen_decode PUBLIC include src/common)
set_target_properties(idgen_decode PROPERTIES POSITION_INDEPENDENT_CODE ${_pic}
                      C_VISIBILITY_PRESET hidden)

# idgen_options: the names a JavaScript Snowflake generator takes
# (src/common/options.c), one list for the addon and idgen.wasm.
add_library(idgen_options OBJECT src/common/options.c)
target_include_directories(idgen_options PUBLIC src/common)
set_target_properties(idgen_options PROPERTIES POSITION_INDEPENDENT_CODE ${_pic}
                      C_VISIBILITY_PRESET hidden)
