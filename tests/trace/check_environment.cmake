# GROVE_TRACE=<file>: a Grove program that is not changed at all writes a Perfetto trace when its
# runtime stops. Run by CTest:
#   cmake -DPROGRAM=<a Grove program> -DARGS=<its arguments> -DWORK_DIR=<dir> -P check_environment.cmake
# Runs it with GROVE_TRACE (and a small GROVE_TRACE_BUFFER), then decodes the file with
# protoc --decode_raw (Debian's protobuf-compiler) and checks it holds the workers' tracks and the
# events the program must have made: a spawn, a run, and the exit of its crashing process with its
# reason. (decode_raw guesses: a string that happens to parse as protobuf prints as a message, so
# the needles are strings it prints as strings.)
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(trace ${WORK_DIR}/program.pftrace)
execute_process(COMMAND ${CMAKE_COMMAND} -E env GROVE_TRACE=${trace} GROVE_TRACE_BUFFER=4096 GROVE_TEST_WORKERS=2
                        ${PROGRAM} ${ARGS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "${PROGRAM} failed (${rc}):\n${out}")
endif()
if(NOT EXISTS ${trace})
  message(FATAL_ERROR "GROVE_TRACE=${trace}: no file written\n${out}")
endif()
find_program(PROTOC protoc)
if(NOT PROTOC)
  message(FATAL_ERROR "protoc not found: tools/setup installs protobuf-compiler")
endif()
execute_process(COMMAND ${PROTOC} --decode_raw INPUT_FILE ${trace} RESULT_VARIABLE rc OUTPUT_VARIABLE decoded ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "protoc --decode_raw could not decode ${trace}: ${err}")
endif()
foreach(needle "\"grove worker 0\"" "\"grove worker 1\"" "\"spawn <0." "\"exit: exception: card declined\"" "\"running on worker ")
  string(FIND "${decoded}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the trace lacks ${needle}:\n${decoded}")
  endif()
endforeach()
string(REGEX MATCHALL "\n1 {" packets "\n${decoded}")
list(LENGTH packets n)
message(STATUS "GROVE_TRACE: ${n} packets, with the workers' tracks, the spawn and the crash's exit")
