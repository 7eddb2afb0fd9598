# Runs CMD with ARGS and fails unless it exits with EXPECT (used by ctest for CLI exit codes).
execute_process(COMMAND ${CMD} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT)
  message(FATAL_ERROR "expected exit ${EXPECT}, got ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(err STREQUAL "")
  message(FATAL_ERROR "expected an error message on stderr")
endif()
