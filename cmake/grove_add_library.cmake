# grove_add_library(<export-name> OUTPUT_NAME <file name> SOURCES <files>...)
#
# One of Grove's libraries, as every one of them is built: the target grove_<export-name> with the
# alias grove::<export-name>, C++20, public headers in the calling folder's include/ (installed under
# include/grove), private sources in src/, warnings on, and install rules into the exported package
# when GROVE_INSTALL is on. The caller adds its own dependencies.
function(grove_add_library export_name)
  cmake_parse_arguments(arg "" "OUTPUT_NAME" "SOURCES" ${ARGN})
  set(target grove_${export_name})
  add_library(${target} ${arg_SOURCES})
  add_library(grove::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name} OUTPUT_NAME ${arg_OUTPUT_NAME})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE src)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # Public, so code compiled against Grove gets it too: a frame larger than a page probes each page
  # on the way down, so an overflow always lands in the execution stack's guard instead of jumping
  # over it into another process's stack (runtime/src/stack_slots.hpp).
  target_compile_options(${target} PUBLIC -fstack-clash-protection)
  if(GROVE_INSTALL)
    include(GNUInstallDirs)
    install(TARGETS ${target} EXPORT grove_targets
      ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/grove DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()
