cudarl_test(test_tensorboard SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tensorboard.c LABELS cpu)
add_test(NAME tensorboard_write
         COMMAND test_tensorboard --write ${CMAKE_CURRENT_BINARY_DIR}/tb-events)
set_tests_properties(tensorboard_write PROPERTIES LABELS "cpu;python" FIXTURES_SETUP tb_events)
add_test(NAME tensorboard_read
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/tensorboard_check.py
                 ${CMAKE_CURRENT_BINARY_DIR}/tb-events)
set_tests_properties(tensorboard_read PROPERTIES LABELS "cpu;python" FIXTURES_REQUIRED tb_events)
