# Install rules (INKLING_INSTALL, on by default at top level): libinkling, include/inkling/*.h,
# the CMake package (find_package(inkling) -> inkling::inkling, versioned), inkling.pc for
# pkg-config, and the `inkling` program when it is built. Both package files are relocatable:
# `cmake --install build --prefix DIR` works for any DIR.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(INKLING_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/inkling)

install(TARGETS inkling_lib EXPORT inklingTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime NAMELINK_COMPONENT Development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/inkling DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT Development FILES_MATCHING PATTERN "*.h")
if(INKLING_APPS)
  install(TARGETS inkling RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
endif()

install(EXPORT inklingTargets NAMESPACE inkling:: DESTINATION ${INKLING_CMAKE_DIR}
  COMPONENT Development)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/inklingConfig.cmake.in
  ${PROJECT_BINARY_DIR}/inklingConfig.cmake INSTALL_DESTINATION ${INKLING_CMAKE_DIR})
# 0.x: a new minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/inklingConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/inklingConfig.cmake
  ${PROJECT_BINARY_DIR}/inklingConfigVersion.cmake
  DESTINATION ${INKLING_CMAKE_DIR} COMPONENT Development)

# pkg-config. The prefix is found from the .pc file's own folder (${pcfiledir}) unless the
# install directories are absolute. A static libinkling needs its dependencies on every link
# line, so they are Requires/Libs; a shared one links them itself: Requires.private/Libs.private
# (pkg-config --static still lists them).
set(pc_deps "libhwy fmt libpcre2-8 libpng libjpeg")
if(BUILD_SHARED_LIBS)
  set(INKLING_PC_REQUIRES "nlohmann_json >= 3")
  set(INKLING_PC_REQUIRES_PRIVATE "${pc_deps}")
  set(INKLING_PC_LIBS "")
  set(INKLING_PC_LIBS_PRIVATE "-pthread")
else()
  set(INKLING_PC_REQUIRES "nlohmann_json >= 3 ${pc_deps}")
  set(INKLING_PC_REQUIRES_PRIVATE "")
  set(INKLING_PC_LIBS "-pthread")
  set(INKLING_PC_LIBS_PRIVATE "")
endif()
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(INKLING_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(INKLING_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(INKLING_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH pc_up /prefix/${pc_dir} /prefix)
  string(REGEX REPLACE "/$" "" pc_up "${pc_up}")  # "../.." for lib/pkgconfig
  set(INKLING_PC_PREFIX "\${pcfiledir}/${pc_up}")
  set(INKLING_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(INKLING_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/inkling.pc.in ${PROJECT_BINARY_DIR}/inkling.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/inkling.pc DESTINATION ${pc_dir} COMPONENT Development)
