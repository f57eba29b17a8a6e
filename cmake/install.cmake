# What `make install` (cmake --install) puts under the prefix, and the two
# ways a C build finds it: pkg-config (simpler.pc) and find_package
# (simplerConfig.cmake). docs/install.md lists the files.
#
# Every rule is in the component "simpler": tools/check-install.sh installs
# that component into a scratch prefix, so its manifest is
# install_manifest_simpler.txt and install_manifest.txt stays the record of
# `make install` that `make uninstall` reads.
include(CMakePackageConfigHelpers)
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME simpler)
set(SIMPLER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/simpler)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/simpler DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/simpler/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/simpler)
install(TARGETS simpler simpler_shared EXPORT simplerTargets)
install(EXPORT simplerTargets NAMESPACE simpler:: DESTINATION ${SIMPLER_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/simplerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/simplerConfig.cmake INSTALL_DESTINATION ${SIMPLER_CMAKE_DIR})
# The major version is the compatibility line, as in the soname.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/simplerConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/simplerConfig.cmake ${PROJECT_BINARY_DIR}/simplerConfigVersion.cmake
        DESTINATION ${SIMPLER_CMAKE_DIR})

# simpler.pc names the prefix relative to its own directory (${pcfiledir}),
# so it is right wherever the tree is installed (--prefix, DESTDIR).
file(RELATIVE_PATH SIMPLER_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${CMAKE_CURRENT_LIST_DIR}/simpler.pc.in ${PROJECT_BINARY_DIR}/simpler.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/simpler.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
