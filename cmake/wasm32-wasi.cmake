# cmake/wasm32-wasi.cmake -- the toolchain file of the WebAssembly build:
# clang for wasm32-wasi against Debian's wasi-libc, linked by lld
# (scripts/install-deps.sh installs clang-14, lld-14, wasi-libc and
# libclang-rt-14-dev-wasm32).  js/wasm/CMakeLists.txt configures the project
# with it in build/wasm; by hand:
#   cmake -S . -B build-wasm -DCMAKE_TOOLCHAIN_FILE=cmake/wasm32-wasi.cmake
#   cmake --build build-wasm        # build-wasm/js/wasm/idgen.wasm
# The host's flags are not the module's: a package build exports
# dpkg-buildflags' CFLAGS and LDFLAGS (-fstack-protector-strong, which
# wasi-libc has no guard for; -z relro), and CMake would take them from the
# environment for this build too.
set(ENV{CFLAGS} "")
set(ENV{CPPFLAGS} "")
set(ENV{LDFLAGS} "")
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_VERSION 1)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR}) # Platform/WASI.cmake

find_program(IDGEN_WASM_CC NAMES clang-14 clang)
set(CMAKE_C_COMPILER ${IDGEN_WASM_CC})
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)

# A sysroot of Debian's wasi-libc alone: with /usr as the sysroot, clang's
# own search would add the host's /usr/include after it.
set(WASI_INCLUDE /usr/include/wasm32-wasi)
set(WASI_LIB /usr/lib/wasm32-wasi)
if(NOT IDGEN_WASI_SYSROOT)
  set(IDGEN_WASI_SYSROOT ${CMAKE_BINARY_DIR}/wasi-sysroot)
endif()
if(NOT EXISTS ${IDGEN_WASI_SYSROOT}/lib/wasm32-wasi)
  file(MAKE_DIRECTORY ${IDGEN_WASI_SYSROOT}/include ${IDGEN_WASI_SYSROOT}/lib)
  file(CREATE_LINK ${WASI_INCLUDE} ${IDGEN_WASI_SYSROOT}/include/wasm32-wasi SYMBOLIC)
  file(CREATE_LINK ${WASI_LIB} ${IDGEN_WASI_SYSROOT}/lib/wasm32-wasi SYMBOLIC)
endif()
set(CMAKE_SYSROOT ${IDGEN_WASI_SYSROOT})
# CMake's checks of the compiler run in projects of their own: same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES IDGEN_WASI_SYSROOT)
set(CMAKE_FIND_ROOT_PATH ${IDGEN_WASI_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# getpid() is asked of WASI's emulation (a fixed value: the fork check it
# feeds has nothing to find here); js/wasm links its library.
set(CMAKE_C_FLAGS_INIT "-D_WASI_EMULATED_GETPID")
