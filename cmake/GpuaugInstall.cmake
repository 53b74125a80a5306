# Installs libgpuaug, its public header and a CMake package (find_package(gpuaug) ->
# gpuaug::gpuaug). Under scikit-build-core the install prefix is the Python package folder, so
# the wheel carries the same tree and gpuaug.cmake_prefix_path points C++ builds at it.
include(CMakePackageConfigHelpers)

set(GPUAUG_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/gpuaug")
# Find PyTorch's libraries from a C++ program too: beside a wheel install (site-packages/gpuaug/lib
# next to site-packages/torch/lib), else where the build found them.
set_target_properties(gpuaug PROPERTIES INSTALL_RPATH "$ORIGIN/../../torch/lib;${TORCH_INSTALL_PREFIX}/lib")

install(TARGETS gpuaug EXPORT gpuaugTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ops/include/gpuaug DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT gpuaugTargets NAMESPACE gpuaug:: DESTINATION ${GPUAUG_CMAKE_DIR})

configure_package_config_file(cmake/gpuaugConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/gpuaugConfig.cmake" INSTALL_DESTINATION ${GPUAUG_CMAKE_DIR})
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/gpuaugConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/gpuaugConfig.cmake"
  "${CMAKE_CURRENT_BINARY_DIR}/gpuaugConfigVersion.cmake" DESTINATION ${GPUAUG_CMAKE_DIR})

# What the Python package checks before it loads the library.
configure_file(cmake/build_info.py.in "${CMAKE_CURRENT_BINARY_DIR}/_build_info.py" @ONLY)
if(SKBUILD)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/_build_info.py" DESTINATION .)
endif()
