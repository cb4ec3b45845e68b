# cmake --install (docs/install.md): libcudarl.so.<version> with its SONAME link, libcudarl.a,
# include/cudarl.h, the CLI (full builds), the CMake package (lib/cmake/cudarl: cudarl::cudarl,
# cudarl::cudarl_static with COMPONENTS static, cudarl::cli) and the pkg-config file
# (lib/pkgconfig/cudarl.pc). pip's build (SKBUILD) installs only its component, "python".
if(SKBUILD)
  return()
endif()
include(CMakePackageConfigHelpers)
set(CUDARL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cudarl)

# The installed library and CLI find what they link where the build found it (the CUDA toolkit,
# the mujoco Python package's libmujoco): every linked folder outside the system's.
set_target_properties(cudarl_shared PROPERTIES EXPORT_NAME cudarl INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(cudarl PROPERTIES EXPORT_NAME cudarl_static)
install(TARGETS cudarl_shared EXPORT cudarlTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS cudarl EXPORT cudarlStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/include/cudarl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev)
if(TARGET cudarl_cli)
  set_target_properties(cudarl_cli PROPERTIES EXPORT_NAME cli INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS cudarl_cli EXPORT cudarlTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT runtime)
endif()
install(EXPORT cudarlTargets NAMESPACE cudarl:: DESTINATION ${CUDARL_CMAKE_DIR} COMPONENT dev)
install(EXPORT cudarlStaticTargets NAMESPACE cudarl:: DESTINATION ${CUDARL_CMAKE_DIR}
        COMPONENT dev)

# What the static library links, for the package (found again there) and for Libs.private.
get_property(CUDARL_IMPORTED GLOBAL PROPERTY CUDARL_IMPORTED) # name=file of each cudarl::name
set(CUDARL_HAVE_OPENMP ON)
if(CUDARL_RUNTIME_ONLY)
  set(CUDARL_HAVE_OPENMP OFF)
endif()
foreach(flag CUDARL_HAVE_CUDA CUDARL_HAVE_CUDNN CUDARL_RUNTIME_ONLY)
  if(${flag}) # as ON or OFF in the package
    set(${flag} ON)
  else()
    set(${flag} OFF)
  endif()
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cudarlConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cudarlConfig.cmake
                              INSTALL_DESTINATION ${CUDARL_CMAKE_DIR})
# 0.x: a minor version may change the API; from 1.0 on, the major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(compat SameMinorVersion)
else()
  set(compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cudarlConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${compat})
install(FILES ${PROJECT_BINARY_DIR}/cudarlConfig.cmake
              ${PROJECT_BINARY_DIR}/cudarlConfigVersion.cmake
        DESTINATION ${CUDARL_CMAKE_DIR} COMPONENT dev)

# ---- pkg-config --------------------------------------------------------------------------
# A library file as linker flags: -l<name> for lib<name>.so or .a, else the path itself
# (libmujoco.so.3.x has no plain .so); outside the compiler's own folders, with -L and an rpath
# to its folder, so that the program finds it when it runs, as CMake's do.
function(cudarl_pc_flags file out)
  get_filename_component(dir ${file} DIRECTORY)
  get_filename_component(base ${file} NAME)
  if(base MATCHES "^lib(.+)\\.(so|a)$")
    set(flags "-l${CMAKE_MATCH_1}")
  else()
    set(flags "${file}")
  endif()
  list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES "${dir}" implicit)
  if(implicit EQUAL -1)
    set(flags "-L${dir} -Wl,-rpath,${dir} ${flags}")
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

set(CUDARL_PC_LIBS_PRIVATE "")
foreach(entry ${CUDARL_IMPORTED})
  string(REGEX REPLACE "^[^=]+=" "" file "${entry}")
  cudarl_pc_flags(${file} flags)
  list(APPEND CUDARL_PC_LIBS_PRIVATE ${flags})
endforeach()
if(CUDARL_HAVE_OPENMP)
  foreach(name ${OpenMP_C_LIB_NAMES})
    cudarl_pc_flags(${OpenMP_${name}_LIBRARY} flags)
    list(APPEND CUDARL_PC_LIBS_PRIVATE ${flags})
  endforeach()
endif()
if(CUDARL_HAVE_CUDA)
  cudarl_pc_flags(${CUDAToolkit_LIBRARY_DIR}/libcudart.so flags)
  list(APPEND CUDARL_PC_LIBS_PRIVATE "${flags} -lcublasLt -lcublas")
  foreach(name ${CMAKE_DL_LIBS} ${CUDARL_CUDA_HOST_LIBS})
    list(APPEND CUDARL_PC_LIBS_PRIVATE -l${name})
  endforeach()
endif()
list(APPEND CUDARL_PC_LIBS_PRIVATE ${CMAKE_THREAD_LIBS_INIT} -lm)
list(REMOVE_DUPLICATES CUDARL_PC_LIBS_PRIVATE)
list(JOIN CUDARL_PC_LIBS_PRIVATE " " CUDARL_PC_LIBS_PRIVATE)
# The .pc file finds its prefix from where it lies, so `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH CUDARL_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" CUDARL_PC_TO_PREFIX "${CUDARL_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/cudarl.pc.in ${PROJECT_BINARY_DIR}/cudarl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cudarl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
