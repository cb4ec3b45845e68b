# Safetensors: unit tests, then interop with the `safetensors` Python package both ways.
# The C side writes a file that Python loads, and Python writes a file that C reads; fixtures
# make each reader run after its writer.
cudarl_test(test_safetensors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_safetensors.c LABELS cpu)

if(Python3_EXECUTABLE)
  set(CUDARL_ST_PYTHON ${Python3_EXECUTABLE})
else()
  message(WARNING "cudarl: no Python 3 interpreter found; the safetensors interop tests will fail "
                  "until python3 (with `pip install safetensors numpy`) is on PATH")
  set(CUDARL_ST_PYTHON python3)
endif()
set(CUDARL_ST_CHECK ${CMAKE_CURRENT_LIST_DIR}/safetensors_check.py)
set(CUDARL_ST_FROM_C ${CMAKE_CURRENT_BINARY_DIR}/safetensors_from_c.safetensors)
set(CUDARL_ST_FROM_PY ${CMAKE_CURRENT_BINARY_DIR}/safetensors_from_python.safetensors)

add_test(NAME safetensors_c_write COMMAND test_safetensors --write ${CUDARL_ST_FROM_C})
add_test(NAME safetensors_python_read
         COMMAND ${CUDARL_ST_PYTHON} ${CUDARL_ST_CHECK} --check ${CUDARL_ST_FROM_C})
add_test(NAME safetensors_python_write
         COMMAND ${CUDARL_ST_PYTHON} ${CUDARL_ST_CHECK} --write ${CUDARL_ST_FROM_PY})
add_test(NAME safetensors_c_read COMMAND test_safetensors --read ${CUDARL_ST_FROM_PY})

set_tests_properties(safetensors_c_write safetensors_python_read safetensors_python_write
                     safetensors_c_read PROPERTIES LABELS "cpu;python")
set_tests_properties(safetensors_c_write PROPERTIES FIXTURES_SETUP cudarl_st_from_c)
set_tests_properties(safetensors_python_read PROPERTIES FIXTURES_REQUIRED cudarl_st_from_c)
set_tests_properties(safetensors_python_write PROPERTIES FIXTURES_SETUP cudarl_st_from_python)
set_tests_properties(safetensors_c_read PROPERTIES FIXTURES_REQUIRED cudarl_st_from_python)
