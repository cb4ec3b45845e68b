# The Python package, staged in the build folder (build/python/cudarl: python/cudarl's modules
# beside this build's libcudarl.so; PYTHONPATH=build/python imports it without pip): on the GPU
# (python/tests/check_gpu.py, label gpu; its make_vec case needs gymnasium on the PYTHONPATH
# cmake was configured with: bench/README.md, "Wheels"). The CPU suite tests the package pip builds
# (scripts/test.sh, python/tests).
file(GLOB CUDARL_PY_MODULES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/cudarl/*.py)
set(CUDARL_PY_STAGE ${CMAKE_BINARY_DIR}/python/cudarl)
add_custom_target(python_stage ALL
                  COMMAND ${CMAKE_COMMAND} -E make_directory ${CUDARL_PY_STAGE}
                  COMMAND ${CMAKE_COMMAND} -E copy ${CUDARL_PY_MODULES} ${CUDARL_PY_STAGE}
                  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:cudarl_shared>
                          ${CUDARL_PY_STAGE}/libcudarl.so # the name _lib.py loads
                  DEPENDS cudarl_shared ${CUDARL_PY_MODULES} VERBATIM)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_python_gpu
           COMMAND ${CUDARL_LAYERS_PYTHON} ${PROJECT_SOURCE_DIR}/python/tests/check_gpu.py)
  set_tests_properties(test_python_gpu PROPERTIES LABELS gpu
                       ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python:$ENV{PYTHONPATH}")
endif()
