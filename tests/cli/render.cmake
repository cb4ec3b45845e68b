# `cudarl render` end to end (test_render.py on the built binary, label cli): CartPolePixels-v1
# frames written as PNG files, and its refusals.
if(Python3_EXECUTABLE)
  set(CUDARL_RENDER_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_RENDER_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
# Built without libpng (CMakeLists.txt finds it), the command must fail naming the package instead.
if(PNG_FOUND)
  set(CUDARL_RENDER_GROUPS files bad_input)
else()
  set(CUDARL_RENDER_GROUPS no_png)
endif()
foreach(group ${CUDARL_RENDER_GROUPS})
  add_test(NAME render_${group}
           COMMAND ${CUDARL_RENDER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_render.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/render-work
                   --only ${group})
  set_tests_properties(render_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 120)
endforeach()
