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
# The static library's MPI link line (pkg-config --static), when built with MPI.
set(SIMPLER_MPI_LIBS_PRIVATE "")
if(SIMPLER_HAVE_MPI)
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND SIMPLER_MPI_LIBS_PRIVATE " ${lib}")
  endforeach()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/simpler.pc.in ${PROJECT_BINARY_DIR}/simpler.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/simpler.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python package (python/simpler, docs/python.md) goes where the
# interpreter that `make test` uses (SIMPLER_PYTHON, /usr/bin/python3) looks
# for packages under a prefix: on Debian lib/python3.N/dist-packages, which
# /usr/bin/python3 searches for /usr/local; for another prefix, PYTHONPATH
# names it. SIMPLER_INSTALL_PYTHONDIR overrides the choice. Beside the
# package's modules, _installed.py records where the library is relative to
# them: the package finds it there before anywhere else but SIMPLER_LIBRARY.
set(SIMPLER_PYTHON /usr/bin/python3 CACHE FILEPATH "The interpreter the Python package is tested and installed for")
if(NOT DEFINED SIMPLER_INSTALL_PYTHONDIR)
  execute_process(COMMAND ${SIMPLER_PYTHON} -c
                    "import sys; print('lib/python%d.%d/dist-packages' % sys.version_info[:2])"
                  OUTPUT_VARIABLE SIMPLER_DETECTED_PYTHONDIR OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE SIMPLER_PYTHON_RC ERROR_QUIET)
  if(NOT SIMPLER_PYTHON_RC EQUAL 0)
    set(SIMPLER_DETECTED_PYTHONDIR lib/python3/dist-packages)
  endif()
  set(SIMPLER_INSTALL_PYTHONDIR ${SIMPLER_DETECTED_PYTHONDIR} CACHE STRING
      "Where under the prefix the Python package is installed")
endif()
file(RELATIVE_PATH SIMPLER_PACKAGE_TO_LIBDIR /${SIMPLER_INSTALL_PYTHONDIR}/simpler /${CMAKE_INSTALL_LIBDIR})
string(REGEX REPLACE "/$" "" SIMPLER_PACKAGE_TO_LIBDIR "${SIMPLER_PACKAGE_TO_LIBDIR}")
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/python/_installed.py CONTENT
"\"\"\"Written by make install: where libsimpler is, relative to this package.\"\"\"
LIBRARY = \"${SIMPLER_PACKAGE_TO_LIBDIR}/$<TARGET_SONAME_FILE_NAME:simpler_shared>\"
")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/simpler DESTINATION ${SIMPLER_INSTALL_PYTHONDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/python/_installed.py
        DESTINATION ${SIMPLER_INSTALL_PYTHONDIR}/simpler)
