# The examples/ folder (user envs written against the public header): built with the tests,
# each example run as a test, next to its own unit test.
add_subdirectory(${PROJECT_SOURCE_DIR}/examples ${CMAKE_BINARY_DIR}/examples)
