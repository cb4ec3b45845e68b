# The files the CLI writes (tests/cli/test_outputs.py): train's checkpoint and metrics, export's
# ONNX model, bench infer's JSON and render's PNG files each refuse a FIFO, a link to one, a link
# to a regular file and a directory before any work, leaving them as they were; a write that
# fails part way (a file-size limit for a full disk) keeps the old file and leaves no temp file.
# One ctest entry per group, each in its own folder.
if(Python3_EXECUTABLE)
  set(CUDARL_OUTPUTS_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_OUTPUTS_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
set(CUDARL_OUTPUTS_GROUPS export train bench)
if(PNG_FOUND)
  list(APPEND CUDARL_OUTPUTS_GROUPS render)
endif()
foreach(group ${CUDARL_OUTPUTS_GROUPS})
  add_test(NAME outputs_${group}
           COMMAND ${CUDARL_OUTPUTS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_outputs.py
                   --cudarl ${CUDARL_CLI_RUN}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/outputs-work --only ${group})
  set_tests_properties(outputs_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
endforeach()
