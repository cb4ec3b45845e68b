# Env renderers and videos: the GIF writer against giflib's decoder, and each renderer against
# Gymnasium's rgb_array render and MinAtar's display palette (test_render_gym.py over the helper
# render_dump; needs python3 with gymnasium, pygame and seaborn, which scripts/setup.sh installs).
cudarl_test(test_video SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_video.c LABELS cpu)
if(GIF_FOUND)
  target_compile_definitions(test_video PRIVATE CUDARL_HAVE_GIF=1)
  target_link_libraries(test_video PRIVATE GIF::GIF)
endif()

add_executable(render_dump ${CMAKE_CURRENT_LIST_DIR}/render_dump.c)
cudarl_test_target(render_dump)
cudarl_test_runner(CUDARL_RENDER_DUMP_RUN render_dump) # tests/cli/video.cmake runs it too
if(Python3_Interpreter_FOUND)
  set(CUDARL_RENDER_GYM_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_RENDER_GYM_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
add_test(NAME test_render_gym
         COMMAND ${CUDARL_RENDER_GYM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_render_gym.py
                 ${CUDARL_RENDER_DUMP_RUN} ${CMAKE_CURRENT_BINARY_DIR}/render-gym-work)
set_tests_properties(test_render_gym PROPERTIES LABELS "cpu;gym" TIMEOUT 120)
