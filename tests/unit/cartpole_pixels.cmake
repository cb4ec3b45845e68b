# CartPolePixels-v1 (src/env/cartpole_pixels/cartpole_pixels*): the env and its drawing on the CPU. Its CUDA
# renderer: tests/gpu/cartpole_pixels_cuda.cmake; `cudarl render`: tests/cli/render.cmake.
cudarl_test(test_cartpole_pixels SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cartpole_pixels.c
            LABELS cpu)
