# The npm package's build of the addon from its own sources (sources/ in the
# package: include/, src/core, src/common, src/registry, cmake/sources.cmake
# and js/src/addon.c, as in the idgen tree).  scripts/prepack.js copies this
# file there as CMakeLists.txt; scripts/install.js runs it where no prebuilt
# binary loads and install scripts are allowed.  It makes idgen.node alone,
# from the same source lists as the tree's build (cmake/sources.cmake), with
# the static libraries inside it.
#
# Needs: a C compiler, cmake, pkg-config, the headers of jansson, libcrypto,
# libpq and libcurl (Debian: libjansson-dev libssl-dev libpq-dev
# libcurl4-openssl-dev), and Node-API's headers: NODE_API_INCLUDE, npm's
# node-api-headers, the headers beside this node (PREFIX/include/node) or
# Debian's libnode-dev (/usr/include/node).  Nothing is downloaded.
cmake_minimum_required(VERSION 3.20)
project(idgen_node LANGUAGES C)

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
# Asserts guard proven invariants: kept, as in the tree's build.
string(REPLACE "-DNDEBUG" "" CMAKE_C_FLAGS_RELEASE "${CMAKE_C_FLAGS_RELEASE}")
option(IDGEN_KEEPER "the lease keeper (threads)" ON)
option(IDGEN_ETCD "etcd:// (jansson; libcurl loaded when used)" ON)
option(IDGEN_VDSO_DIRECT "vDSO clock called directly" OFF)

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
pkg_check_modules(LIBPQ REQUIRED libpq)
pkg_check_modules(LIBCURL REQUIRED libcurl)

find_path(NODE_API_INCLUDE node_api.h HINTS $ENV{NODE_API_INCLUDE} ${NODE_API_HINTS}
          PATHS /usr/include/node NO_DEFAULT_PATH)
if(NOT NODE_API_INCLUDE)
  message(FATAL_ERROR "node_api.h not found: set NODE_API_INCLUDE, or install npm's "
                      "node-api-headers or Debian's libnode-dev")
endif()

include(cmake/sources.cmake)

add_library(idgen_node MODULE js/src/addon.c)
target_include_directories(idgen_node PRIVATE include src/common)
target_include_directories(idgen_node SYSTEM PRIVATE ${NODE_API_INCLUDE})
target_compile_definitions(idgen_node PRIVATE NODE_GYP_MODULE_NAME=idgen)
target_link_libraries(idgen_node PRIVATE idgen_registry_objects idgen_objects idgen_decode
                      idgen_options Threads::Threads PkgConfig::JANSSON PkgConfig::LIBCRYPTO
                      ${CMAKE_DL_LIBS})
set_target_properties(idgen_node PROPERTIES PREFIX "" SUFFIX ".node" OUTPUT_NAME idgen
                      C_VISIBILITY_PRESET hidden)
