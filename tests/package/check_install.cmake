# The installed package works from an application. Run by CTest:
#   cmake -DMODE=<static|shared|clang|deb> -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P check_install.cmake
# static: installs the build tree (static libraries) into a scratch prefix; for each component builds
#   tests/package/consumer with find_package(grove CONFIG REQUIRED COMPONENTS <it>) alone, and with
#   its pkg-config file from a plain Makefile, and runs both; a missing component must be a clear error.
# shared: builds the libraries (and the examples, linked against them) again with BUILD_SHARED_LIBS=ON,
#   checks their SONAME and that they export the public API only (nm -D: grove::, never
#   grove::internal:: nor llhttp), and runs the consumers.
# clang: builds the libraries and the examples with clang++ (GCC is what the other tests use),
#   installs them and runs every consumer built with clang++ too.
# deb: makes the Debian package with CPack (the build's install, under /usr), checks its Depends and
#   that apt would install it here (apt-get -s), unpacks it into a scratch root and builds a consumer.
cmake_minimum_required(VERSION 3.22)
set(components runtime supervisors services http throw_traces dist)

function(run)
  cmake_parse_arguments(arg "" "WHAT;OUTPUT" "COMMAND" ${ARGN})
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${arg_WHAT} failed (${rc}):\n${out}")
  endif()
  if(arg_OUTPUT)
    set(${arg_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# Builds and runs the consumer of one component against PREFIX, with CMake and with pkg-config.
function(check_consumers prefix)
  foreach(c IN LISTS ARGN)
    set(dir ${WORK_DIR}/consumer-${c})
    run(WHAT "configuring the ${c} consumer with find_package(grove COMPONENTS ${c})"
        COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${dir} -G Ninja
                -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release -DGROVE_COMPONENT=${c})
    run(WHAT "building the ${c} consumer" COMMAND ${CMAKE_COMMAND} --build ${dir})
    # A shared install outside the loader's paths is found through LD_LIBRARY_PATH, as any
    # library's is (the executable's RUNPATH does not reach its libraries' own dependencies).
    file(GLOB libdirs ${prefix}/lib*)
    run(WHAT "running the ${c} consumer" COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdirs} ${dir}/consumer OUTPUT out)
    message(STATUS "find_package(grove COMPONENTS ${c}): ${out}")
    set(pc ${WORK_DIR}/pc-${c})
    file(MAKE_DIRECTORY ${pc})
    file(COPY ${SOURCE_DIR}/tests/package/consumer/Makefile ${SOURCE_DIR}/tests/package/consumer/${c}.cpp DESTINATION ${pc})
    file(GLOB pcdirs ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
    run(WHAT "building the ${c} consumer with pkg-config"
        COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdirs} make -s -C ${pc} COMPONENT=${c})
    run(WHAT "running the ${c} pkg-config consumer"
        COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdirs} ${pc}/consumer_pc OUTPUT out)
    message(STATUS "pkg-config grove-${c}: ${out}")
  endforeach()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

if(MODE STREQUAL "static")
  run(WHAT "install" COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  check_consumers(${WORK_DIR}/prefix ${components})
  # A component that does not exist: a clear error naming it and the ones there are.
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer -B ${WORK_DIR}/consumer-missing -G Ninja
                          -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DGROVE_COMPONENT=telepathy
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "grove has no component telepathy; its components are:[ \n]+runtime[ \n]+supervisors[ \n]+services[ \n]+http[ \n]+throw_traces[ \n]+dist")
    message(FATAL_ERROR "find_package(grove COMPONENTS telepathy) did not fail clearly:\n${out}")
  endif()
elseif(MODE STREQUAL "shared")
  run(WHAT "configuring a shared build"
      COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
              -DGROVE_BUILD_TESTS=OFF -DGROVE_BUILD_EXAMPLES=ON -DGROVE_BUILD_BENCH=OFF -DGROVE_INSTALL=ON)
  # The examples too: linked against the shared libraries, they check that what they use is exported.
  run(WHAT "the shared build" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  run(WHAT "install" COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix)
  foreach(lib grove grove_supervisors grove_services grove_http grove_dist)
    file(GLOB so ${WORK_DIR}/prefix/lib*/lib${lib}.so)
    if(NOT so)
      message(FATAL_ERROR "no lib${lib}.so installed")
    endif()
    run(WHAT "readelf" COMMAND readelf -d ${so} OUTPUT dyn)
    if(NOT dyn MATCHES "Library soname: \\[lib${lib}\\.so\\.[0-9]+\\.[0-9]+\\]")
      message(FATAL_ERROR "lib${lib}.so has no versioned SONAME:\n${dyn}")
    endif()
    run(WHAT "nm -D" COMMAND nm -DC --defined-only ${so} OUTPUT syms)
    string(REGEX MATCHALL "[^\n]*grove::(dist::)?internal::[^\n]*" internal "${syms}")
    string(REGEX MATCHALL "[^\n]* [TtVvWwBbDdRr] grove::[^\n]*" public "${syms}")
    string(REGEX MATCHALL "[^\n]* [TD] llhttp_[^\n]*" parser "${syms}")
    list(LENGTH public n_public)
    if(internal OR parser OR n_public EQUAL 0)
      message(FATAL_ERROR "lib${lib}.so exports what it must not (grove::internal, llhttp), or no public API:\n${internal}\n${parser}")
    endif()
    message(STATUS "lib${lib}.so: ${n_public} public symbols exported, none internal")
  endforeach()
  check_consumers(${WORK_DIR}/prefix runtime http dist)
elseif(MODE STREQUAL "clang")
  find_program(clang NAMES clang++ clang++-14 REQUIRED)
  find_program(clang_c NAMES clang clang-14 REQUIRED)
  run(WHAT "configuring a clang build"
      COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
              -DCMAKE_CXX_COMPILER=${clang} -DCMAKE_C_COMPILER=${clang_c}
              -DGROVE_BUILD_TESTS=OFF -DGROVE_BUILD_EXAMPLES=ON -DGROVE_BUILD_BENCH=OFF -DGROVE_INSTALL=ON)
  run(WHAT "the clang build" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  run(WHAT "install" COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix)
  set(ENV{CXX} ${clang})
  check_consumers(${WORK_DIR}/prefix ${components})
elseif(MODE STREQUAL "deb")
  run(WHAT "cpack -G DEB" COMMAND cpack -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/deb)
  file(GLOB deb ${WORK_DIR}/deb/grove_*.deb)
  if(NOT deb)
    message(FATAL_ERROR "cpack made no grove_*.deb in ${WORK_DIR}/deb")
  endif()
  run(WHAT "dpkg-deb -f" COMMAND dpkg-deb -f ${deb} Package Version Depends OUTPUT fields)
  message(STATUS "${deb}:\n${fields}")
  foreach(dep libboost-context1.74-dev libfmt-dev libssl-dev)
    if(NOT fields MATCHES "${dep}")
      message(FATAL_ERROR "the package does not depend on ${dep}:\n${fields}")
    endif()
  endforeach()
  run(WHAT "dpkg-deb -c" COMMAND dpkg-deb -c ${deb} OUTPUT contents)
  foreach(f include/grove/grove.hpp lib/libgrove.a lib/cmake/grove/grove-config.cmake lib/pkgconfig/grove-runtime.pc lib/pkgconfig/grove-http.pc lib/pkgconfig/grove-dist.pc include/grove/term.hpp)
    if(NOT contents MATCHES "\\./usr/${f}")
      message(FATAL_ERROR "the package lacks /usr/${f}:\n${contents}")
    endif()
  endforeach()
  find_program(apt_get apt-get)
  if(apt_get)
    run(WHAT "apt-get -s install ./grove_*.deb (would apt install it here?)" COMMAND ${apt_get} -s -q install ${deb} OUTPUT sim)
    if(NOT sim MATCHES "Inst grove ")
      message(FATAL_ERROR "apt-get -s did not plan to install grove:\n${sim}")
    endif()
  endif()
  run(WHAT "dpkg-deb -x" COMMAND dpkg-deb -x ${deb} ${WORK_DIR}/root)
  check_consumers(${WORK_DIR}/root/usr runtime)
else()
  message(FATAL_ERROR "MODE must be static, shared, clang or deb, not '${MODE}'")
endif()
