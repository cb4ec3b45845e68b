# The layer rule: every #include under src/ and tools/ against the table in docs/DESIGN.md, with
# the edges not yet fixed listed in layers_known.txt (test_layers); and the test itself on a copy
# of the tree with forbidden includes injected (test_layers_self_test). Python 3, stdlib only.
if(Python3_EXECUTABLE)
  set(CUDARL_LAYERS_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_LAYERS_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
add_test(NAME test_layers
         COMMAND ${CUDARL_LAYERS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_layers.py
                 --root ${PROJECT_SOURCE_DIR})
add_test(NAME test_layers_self_test
         COMMAND ${CUDARL_LAYERS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_layers.py
                 --root ${PROJECT_SOURCE_DIR} --self-test)
set_tests_properties(test_layers test_layers_self_test PROPERTIES LABELS cpu)
