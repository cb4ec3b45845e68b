# CartPolePixels-v1 (src/env/cartpole_pixels*): the env and its drawing on the CPU; the CUDA
# renderer against the CPU's bytes (label gpu, excluded by ctest -LE gpu); and `cudarl render`
# end to end (tests/test_render.py on the built binary, label cli).
cudarl_test(test_cartpole_pixels SOURCES test_cartpole_pixels.c LABELS cpu)
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_cartpole_pixels_cuda SOURCES test_cartpole_pixels_cuda.c LABELS gpu)
endif()

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
           COMMAND ${CUDARL_RENDER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_render.py
                   --cudarl $<TARGET_FILE:cudarl_cli> --work ${CMAKE_CURRENT_BINARY_DIR}/render-work
                   --only ${group})
  set_tests_properties(render_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 120)
endforeach()
