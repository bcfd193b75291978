# grove_add_library(<export-name> OUTPUT_NAME <file name> DESCRIPTION <text> SOURCES <files>...
#                   [PC_REQUIRES <pkg-config packages>...] [PC_LIBS <linker flags>...])
#
# One of Grove's libraries, as every one of them is built: the target grove_<export-name> with the
# alias grove::<export-name>, C++20, public headers in the calling folder's include/ (installed under
# include/grove), private sources in src/, warnings on, and install rules into the exported package
# (a component of find_package(grove)) and a pkg-config file grove-<export-name>.pc when
# GROVE_INSTALL is on. The caller adds its own dependencies; PC_REQUIRES and PC_LIBS say them to
# pkg-config (PC_LIBS: what has no .pc file, as Boost.Context).
#
# Static by default, shared with BUILD_SHARED_LIBS=ON. Static is the default because it is what the
# benchmarks measure and what an application that embeds a runtime usually wants (one binary, the
# runtime's calls resolved at link time, no interposition through the PLT on the message path); the
# shared build is for distributions and plugins. A shared library has SONAME lib<name>.so.MAJOR.MINOR
# (0.x: every minor release may change the ABI) and exports the public API only: sources are
# compiled with hidden visibility, and the public headers (include/grove) mark what they declare
# default (GROVE_PUBLIC_BEGIN, grove/detail/visibility.hpp), so grove::internal and the bundled
# llhttp stay inside; tests/package/check_install.cmake checks it with nm -D.
function(grove_add_library export_name)
  cmake_parse_arguments(arg "" "OUTPUT_NAME;DESCRIPTION" "SOURCES;PC_REQUIRES;PC_LIBS" ${ARGN})
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
  if(BUILD_SHARED_LIBS)
    set_target_properties(${target} PROPERTIES
      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
      CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden)
    target_compile_definitions(${target} PRIVATE GROVE_BUILDING_SHARED)
  endif()
  if(GROVE_INSTALL)
    include(GNUInstallDirs)
    install(TARGETS ${target} EXPORT grove_targets
      ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/grove DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
    # pkg-config: a static library names what it needs in Libs, a shared one in Libs.private.
    set(pc_component ${export_name})
    set(pc_output_name ${arg_OUTPUT_NAME})
    set(pc_description "${arg_DESCRIPTION}")
    list(JOIN arg_PC_REQUIRES " " pc_requires)
    list(JOIN arg_PC_LIBS " " pc_own_libs)
    if(BUILD_SHARED_LIBS)
      set(pc_libs "-pthread")
      set(pc_libs_private "${pc_own_libs}")
    else()
      set(pc_libs "${pc_own_libs} -pthread")
      set(pc_libs_private "")
    endif()
    file(RELATIVE_PATH pc_rel_prefix "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
    configure_file(${PROJECT_SOURCE_DIR}/cmake/grove.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/grove-${export_name}.pc @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/grove-${export_name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endif()
endfunction()
