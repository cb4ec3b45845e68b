# Camera frames to observations (src/runtime/frames.c, ops/frames.h): test_frames on the CPU (label
# cpu) and with its policies on the GPU (label gpu: the frames' device tick, frames_cuda.cu, and
# the CUDA frame_to_obs, against the CPU's bit for bit; submit / wait with two ticks in flight
# against ticks one by one, frames pageable, pinned, device); it loads the CartPole MLP
# checkpoint that policy_runtime.cmake's fixture trains, to see it refused. test_frames_opencv
# holds the CPU reference against OpenCV's cvtColor + resize(INTER_AREA) through the helper
# frames_dump (needs python3 with numpy and opencv-python-headless, which scripts/setup.sh
# installs).
set(CUDARL_FRAMES_MLP ${CMAKE_CURRENT_BINARY_DIR}/policy-runtime-runs/ppo/model.safetensors)
cudarl_test(test_frames SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_frames.c LABELS cpu
            ARGS cpu ${CUDARL_FRAMES_MLP})
set_tests_properties(test_frames PROPERTIES FIXTURES_REQUIRED policy_runtime_checkpoints)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_frames_cuda COMMAND test_frames cuda ${CUDARL_FRAMES_MLP})
  set_tests_properties(test_frames_cuda PROPERTIES LABELS gpu
                       FIXTURES_REQUIRED policy_runtime_checkpoints)
endif()

add_executable(frames_dump ${CMAKE_CURRENT_LIST_DIR}/frames_dump.c)
cudarl_test_target(frames_dump)
cudarl_test_runner(CUDARL_FRAMES_DUMP_RUN frames_dump)
if(Python3_Interpreter_FOUND)
  set(CUDARL_FRAMES_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_FRAMES_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
add_test(NAME test_frames_opencv
         COMMAND ${CUDARL_FRAMES_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_frames_opencv.py
                 ${CUDARL_FRAMES_DUMP_RUN} ${CMAKE_CURRENT_BINARY_DIR}/frames-opencv-work)
set_tests_properties(test_frames_opencv PROPERTIES LABELS cpu TIMEOUT 120)
