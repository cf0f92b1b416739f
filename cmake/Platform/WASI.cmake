# cmake/Platform/WASI.cmake -- CMake's platform file for CMAKE_SYSTEM_NAME
# WASI (cmake/wasm32-wasi.cmake), which CMake 3.25 does not have: a module
# is a .wasm file; no shared libraries.
set(WASI 1)
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
set_property(GLOBAL PROPERTY TARGET_SUPPORTS_SHARED_LIBS FALSE)
