# Google Benchmark for ubench (included by CMakeLists.txt): defines the target
# benchmark::benchmark and RAPLBENCH_GBENCH_LIBRARY, the words ubench puts in
# its output (context "raplbench_gbench_library") to say which library it is.
#
# By default ubench builds Google Benchmark 1.7.1 here, static, with NDEBUG,
# from Debian's source package, which ci/gbench-source (make deps) fetches
# into .cache/gbench/; why not Debian's libbenchmark-dev, built without
# NDEBUG: README, "Google Benchmark".
#
# RAPLBENCH_GBENCH selects:
#   auto    (default) the source when .cache/gbench/ holds it with the pinned
#           checksum, else Debian's library with a warning saying why;
#   source  the source, or a configure error;
#   system  Debian's library (make gbench-effect builds this to compare).
# Configuring again (automatic once the source arrives: CMake watches
# .cache/gbench/) picks the source up. RAPLBENCH_GBENCH_CACHE moves
# .cache/gbench/ (a test hook).
set(RAPLBENCH_GBENCH auto CACHE STRING "Google Benchmark: auto, source (1.7.1 with NDEBUG) or system (Debian's)")
set_property(CACHE RAPLBENCH_GBENCH PROPERTY STRINGS auto source system)
if(NOT RAPLBENCH_GBENCH MATCHES "^(auto|source|system)$")
  message(FATAL_ERROR "RAPLBENCH_GBENCH=${RAPLBENCH_GBENCH}: must be auto, source or system")
endif()

set(_gb_pin ${CMAKE_SOURCE_DIR}/ci/gbench-source.txt)
foreach(_gb_key package version file sha256 dir)
  file(STRINGS ${_gb_pin} _gb_line REGEX "^${_gb_key} ")
  string(REGEX REPLACE "^${_gb_key} +" "" _gb_${_gb_key} "${_gb_line}")
  if(_gb_${_gb_key} STREQUAL "")
    message(FATAL_ERROR "${_gb_pin}: no '${_gb_key} <value>' line")
  endif()
endforeach()
set(RAPLBENCH_GBENCH_CACHE ${CMAKE_SOURCE_DIR}/.cache/gbench CACHE PATH
    "where ci/gbench-source puts Google Benchmark's source")
set(_gb_tarball ${RAPLBENCH_GBENCH_CACHE}/${_gb_file})
file(MAKE_DIRECTORY ${RAPLBENCH_GBENCH_CACHE})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${RAPLBENCH_GBENCH_CACHE} ${_gb_pin})

set(_gb_missing "")
if(RAPLBENCH_GBENCH STREQUAL "system")
  set(_gb_missing "RAPLBENCH_GBENCH=system")
elseif(NOT EXISTS ${_gb_tarball})
  set(_gb_missing "${_gb_tarball} missing (make deps fetches it: ci/gbench-source)")
else()
  file(SHA256 ${_gb_tarball} _gb_actual)
  if(NOT _gb_actual STREQUAL _gb_sha256)
    set(_gb_missing "${_gb_tarball}: sha256 ${_gb_actual}, expected ${_gb_sha256} (delete it; make deps fetches it again)")
  endif()
endif()
if(NOT _gb_missing STREQUAL "" AND RAPLBENCH_GBENCH STREQUAL "source")
  message(FATAL_ERROR "raplbench: RAPLBENCH_GBENCH=source but ${_gb_missing}")
endif()

if(_gb_missing STREQUAL "")
  # Extracted again only when the tarball changes, so that a reconfigure
  # does not rebuild the library.
  set(_gb_root ${CMAKE_BINARY_DIR}/_deps/gbench)
  set(_gb_stamp ${_gb_root}/.sha256)
  set(_gb_have "")
  if(EXISTS ${_gb_stamp})
    file(READ ${_gb_stamp} _gb_have)
  endif()
  if(NOT _gb_have STREQUAL _gb_sha256 OR NOT EXISTS ${_gb_root}/${_gb_dir}/CMakeLists.txt)
    file(REMOVE_RECURSE ${_gb_root})
    file(ARCHIVE_EXTRACT INPUT ${_gb_tarball} DESTINATION ${_gb_root})
    file(WRITE ${_gb_stamp} ${_gb_sha256})
  endif()
  # The library alone: static, no tests, no install rules, no -Werror (a
  # newer compiler's warning must not break the build), no LTO.
  foreach(_gb_option BENCHMARK_ENABLE_TESTING BENCHMARK_ENABLE_GTEST_TESTS
          BENCHMARK_ENABLE_ASSEMBLY_TESTS BENCHMARK_ENABLE_INSTALL BENCHMARK_INSTALL_DOCS
          BENCHMARK_ENABLE_WERROR BENCHMARK_ENABLE_LTO BENCHMARK_ENABLE_LIBPFM BUILD_SHARED_LIBS)
    set(${_gb_option} OFF)
  endforeach()
  # Upstream takes its version from `git describe` run in its source
  # directory, which here is inside raplbench's work tree: it would read
  # raplbench's tags and refresh raplbench's git index. Its module skips its
  # own definition when __get_git_version is set (as Debian's patch 0001
  # avoids git): the version is then project()'s, 1.7.1.
  set(__get_git_version INCLUDED)
  function(get_git_version var)
    set(${var} "0.0.0" PARENT_SCOPE)
  endfunction()
  add_subdirectory(${_gb_root}/${_gb_dir} ${CMAKE_BINARY_DIR}/_deps/gbench-build EXCLUDE_FROM_ALL)
  # NDEBUG whatever CMAKE_BUILD_TYPE says: that is the point of building it.
  target_compile_definitions(benchmark PRIVATE NDEBUG)
  # Its warnings are upstream's business, not ours.
  target_compile_options(benchmark PRIVATE -w)
  string(REGEX REPLACE "-[^-]*$" "" _gb_upstream ${_gb_version})
  set(RAPLBENCH_GBENCH_NDEBUG 1)
  string(CONCAT RAPLBENCH_GBENCH_LIBRARY "Google Benchmark ${_gb_upstream} (Debian source "
      "package ${_gb_package} ${_gb_version}), built here with NDEBUG, static")
  message(STATUS "raplbench: Google Benchmark ${_gb_upstream} from ${_gb_tarball}, built with NDEBUG")
else()
  find_package(benchmark REQUIRED)          # Debian's libbenchmark-dev 1.7.1
  set(RAPLBENCH_GBENCH_NDEBUG 0)
  set(RAPLBENCH_GBENCH_LIBRARY "Debian's libbenchmark ${benchmark_VERSION}, built without NDEBUG, shared")
  if(NOT RAPLBENCH_GBENCH STREQUAL "system")
    message(WARNING "raplbench: ubench links Debian's libbenchmark (built without NDEBUG: every "
                    "run prints 'Library was built as DEBUG'; README, 'Google Benchmark'), because "
                    "${_gb_missing}")
  endif()
endif()
