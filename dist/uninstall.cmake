# uninstall.cmake -- `make uninstall`: undoes the last `make install` (or
# `cmake --install BUILD`) from build directory BUILD.
#   cmake -DBUILD=build -P dist/uninstall.cmake
#
# Removes every file BUILD/install_manifest.txt lists (under the DESTDIR of
# that install, recorded in BUILD/install_dirs.txt), then each directory BUILD/install_dirs.txt lists (those that
# install created: the CMakeLists.txt install section records them before
# installing anything) if it is empty now, deepest first.  A directory that
# was there before, or that holds anything else, stays.  Both lists are
# removed at the end, so a second run has nothing to do.
if(NOT BUILD)
  message(FATAL_ERROR "usage: cmake -DBUILD=BUILD_DIR -P uninstall.cmake")
endif()
set(manifest "${BUILD}/install_manifest.txt")
set(dirs_file "${BUILD}/install_dirs.txt")
if(NOT EXISTS "${manifest}")
  message(STATUS "Nothing to uninstall: no ${manifest} (run make install first)")
  return()
endif()

# The manifest leaves DESTDIR out; the install recorded it (DESTDIR in the
# environment, if set, wins).
set(destdir "$ENV{DESTDIR}")
set(dirs)
if(EXISTS "${dirs_file}")
  file(STRINGS "${dirs_file}" dirs REGEX "^/")
  file(STRINGS "${dirs_file}" recorded REGEX "^DESTDIR=")
  if(recorded AND NOT DEFINED ENV{DESTDIR})
    string(REGEX REPLACE "^DESTDIR=" "" destdir "${recorded}")
  endif()
endif()

file(STRINGS "${manifest}" files)
set(failed 0)
foreach(f IN LISTS files)
  set(f "${destdir}${f}")
  if(EXISTS "${f}" OR IS_SYMLINK "${f}")
    message(STATUS "Removing: ${f}")
    file(REMOVE "${f}")
    if(EXISTS "${f}" OR IS_SYMLINK "${f}")
      message(WARNING "cannot remove ${f}")
      set(failed 1)
    endif()
  else()
    message(STATUS "Already gone: ${f}")
  endif()
endforeach()

# Deepest first: a directory's children before it.
set(keyed)
foreach(d IN LISTS dirs)
  string(REGEX REPLACE "[^/]" "" slashes "${d}")
  string(LENGTH "${slashes}" depth)
  math(EXPR key "1000 + ${depth}")
  list(APPEND keyed "${key}|${d}")
endforeach()
list(SORT keyed)
list(REVERSE keyed)
foreach(k IN LISTS keyed)
  string(REGEX REPLACE "^[0-9]+\\|" "" d "${k}")
  if(IS_DIRECTORY "${d}" AND NOT IS_SYMLINK "${d}")
    file(GLOB children LIST_DIRECTORIES true "${d}/*" "${d}/.*")
    list(FILTER children EXCLUDE REGEX "/\\.\\.?$")
    if(children)
      message(STATUS "Keeping (not empty): ${d}")
    else()
      message(STATUS "Removing: ${d}/")
      file(REMOVE_RECURSE "${d}")  # empty: nothing below it goes
    endif()
  endif()
endforeach()

if(failed)
  message(FATAL_ERROR "some files could not be removed (permissions? sudo make uninstall)")
endif()
file(REMOVE "${manifest}" "${dirs_file}")
