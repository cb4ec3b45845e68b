# `cudarl plot` end to end (test_plot.py on the built binary, label cli): synthetic runs whose
# curves must land on the pixels their data says, grouping, and the refusals.
if(Python3_EXECUTABLE)
  set(CUDARL_PLOT_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_PLOT_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
# Built without libpng (CMakeLists.txt finds it), the command must fail naming the package.
if(PNG_FOUND)
  set(CUDARL_PLOT_GROUPS curves bad_input)
else()
  set(CUDARL_PLOT_GROUPS no_png)
endif()
foreach(group ${CUDARL_PLOT_GROUPS})
  add_test(NAME plot_${group}
           COMMAND ${CUDARL_PLOT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_plot.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/plot-work
                   --only ${group})
  set_tests_properties(plot_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 120)
endforeach()
