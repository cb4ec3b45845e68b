# `cudarl render` (tools/render.c): an env's pixel observations as PNG files, written with libpng.
# Without libpng the command still exists and fails saying which package to install
# (libpng-dev; scripts/setup.sh installs it). Tests see PNG_FOUND (tests/cli/render.cmake).
find_package(PNG)
target_sources(cudarl_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/render.c)
if(PNG_FOUND)
  target_compile_definitions(cudarl_cli PRIVATE CUDARL_HAVE_PNG=1)
  target_link_libraries(cudarl_cli PRIVATE PNG::PNG)
else()
  message(STATUS "cudarl: libpng not found: `cudarl render` will fail saying so; install "
                 "libpng-dev (Debian/Ubuntu) and reconfigure")
endif()
