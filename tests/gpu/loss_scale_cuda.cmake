# Dynamic loss scaling's CUDA twin (src/ops/cuda/loss_scale.cu) against the CPU one
# (src/ops/cpu/loss_scale.c), bit for bit (needs a GPU: label gpu, excluded by ctest -LE gpu).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_loss_scale_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loss_scale_cuda.c
              LABELS gpu)
endif()
