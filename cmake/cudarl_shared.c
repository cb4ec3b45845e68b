/* libcudarl.so is the static library's objects linked whole (CMakeLists.txt, "shared
 * library"); a target needs one source of its own, and this is it. */
typedef int cudarl_shared_unit;
