# cmake/install.cmake: what `cmake --install build --prefix P` puts in P,
# included by CMakeLists.txt (WEFT_INSTALL) after the libraries exist.
#
#   lib/libweft.so.0.1, libweft.so.0 (the SONAME), libweft.so
#   lib/libweft_static.a                 (not in the static-LLVM flavour)
#   include/weft.h, include/weft_ops.h   (every public header in include/)
#   lib/cmake/weft/weftConfig.cmake, weftConfigVersion.cmake,
#       weftTargets*.cmake               find_package(weft CONFIG):
#                                        weft::weft, weft::weft_static
#   lib/pkgconfig/weft.pc, weft_static.pc
#   share/doc/weft/LICENSE, NOTICE       (and LICENSE-LLVM.txt where the
#                                        static-LLVM flavour carries LLVM)
#
# (lib is CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu under /usr on Debian.)
# Everything installed is relocatable: the CMake package finds its files
# relative to itself, and the .pc files name their prefix relative to
# ${pcfiledir}, so that `--prefix` at install time, or moving the tree
# afterwards, needs no reconfiguring.
#
# The two flavours.  Ordinary: libweft.so needs the shared libLLVM-19,
# which its ELF header names (NEEDED), so a consumer of weft::weft links
# only libweft; the static libweft_static.a needs libLLVM-19, threads,
# libm and libdl on the consumer's link line, which weft::weft_static's
# interface and weft_static.pc (and weft.pc's Libs.private) carry.
# WEFT_STATIC_LLVM: libweft.so holds LLVM, libstdc++ and libgcc and
# exports only weft_*, for an embedder that has its own LLVM; a consumer
# links it with nothing of LLVM on its command line.  Its weft_static is
# not installed: an archive cannot hide LLVM's symbols as the version
# script hides them in the .so, so it would need either the shared
# libLLVM (which the ordinary flavour gives) or LLVM's static component
# libraries on the consumer's link line (which the flavour exists to
# avoid).
#
# The version file: while weft is 0.x a minor release may change the API
# and the ABI, so a request for 0.1 accepts 0.1.x only (SameMinorVersion);
# from 1.0 on, any 1.y (SameMajorVersion).
include(CMakePackageConfigHelpers)

set(WEFT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
set(WEFT_INSTALL_TARGETS weft)
if(NOT WEFT_STATIC_LLVM)
  list(APPEND WEFT_INSTALL_TARGETS weft_static)
endif()

install(TARGETS ${WEFT_INSTALL_TARGETS} EXPORT weftTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
# weft-info is installed where its target is made (CMakeLists.txt), after
# this file is included.

# The CMake package.
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${WEFT_CMAKE_DIR})
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(WEFT_COMPATIBILITY SameMinorVersion)
else()
  set(WEFT_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${WEFT_COMPATIBILITY})
if(LLVM_FOUND)
  set(WEFT_PACKAGE_HAVE_LLVM ON)
else()
  set(WEFT_PACKAGE_HAVE_LLVM OFF)
endif()
if(WEFT_STATIC_LLVM)
  set(WEFT_PACKAGE_STATIC_LLVM ON)
else()
  set(WEFT_PACKAGE_STATIC_LLVM OFF)
endif()
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weftConfig.cmake
  INSTALL_DESTINATION ${WEFT_CMAKE_DIR})
install(FILES ${PROJECT_BINARY_DIR}/weftConfig.cmake
              ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
        DESTINATION ${WEFT_CMAKE_DIR})

# pkg-config.  What libweft_static.a needs after it: libLLVM-19 as
# -L<dir> -lLLVM-19 where LLVM's library folder has that name (Debian's
# llvm-19-dev), else by its file; threads, libm, libdl.
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(WEFT_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
  set(WEFT_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
else()
  file(RELATIVE_PATH WEFT_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
  string(REGEX REPLACE "/$" "" WEFT_PC_UP "${WEFT_PC_UP}")
  set(WEFT_PC_PREFIX "\${pcfiledir}/${WEFT_PC_UP}")
  set(WEFT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  set(WEFT_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
else()
  set(WEFT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(WEFT_PC_DEPS "")
if(LLVM_FOUND)
  set(llvm_name LLVM-${LLVM_VERSION_MAJOR})
  if(EXISTS ${LLVM_LIBRARY_DIR}/lib${llvm_name}.so)
    set(WEFT_PC_DEPS "-L${LLVM_LIBRARY_DIR} -l${llvm_name} ")
  else()
    set(WEFT_PC_DEPS "${WEFT_LLVM_SO} ")
  endif()
endif()
string(APPEND WEFT_PC_DEPS "-lpthread -lm")
foreach(lib ${CMAKE_DL_LIBS})
  string(APPEND WEFT_PC_DEPS " -l${lib}")
endforeach()

# weft.pc: the shared library.  Libs.private is what a static link of
# libweft would add: nothing of LLVM's in the static-LLVM flavour.
set(WEFT_PC_NAME weft)
set(WEFT_PC_LIBS "-lweft")
if(WEFT_STATIC_LLVM)
  set(WEFT_PC_LIBS_PRIVATE "-lpthread -lm")
else()
  set(WEFT_PC_LIBS_PRIVATE "${WEFT_PC_DEPS}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/weft.pc.in
               ${PROJECT_BINARY_DIR}/pkgconfig/weft.pc @ONLY)
set(WEFT_PC_FILES ${PROJECT_BINARY_DIR}/pkgconfig/weft.pc)
# weft_static.pc: the archive, whose dependencies every link needs, so
# they are in Libs.
if(NOT WEFT_STATIC_LLVM)
  set(WEFT_PC_NAME weft_static)
  set(WEFT_PC_LIBS "-lweft_static ${WEFT_PC_DEPS}")
  set(WEFT_PC_LIBS_PRIVATE "")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/weft.pc.in
                 ${PROJECT_BINARY_DIR}/pkgconfig/weft_static.pc @ONLY)
  list(APPEND WEFT_PC_FILES ${PROJECT_BINARY_DIR}/pkgconfig/weft_static.pc)
endif()
install(FILES ${WEFT_PC_FILES}
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The licenses.  The static-LLVM flavour carries LLVM's code, so it
# installs LLVM's license text where the system has a copy (Debian's
# llvm-19 ships it with lit); NOTICE says which licenses apply.
set(WEFT_DOC_FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE)
# (Not CMAKE_INSTALL_DOCDIR: a parent project that included GNUInstallDirs
# first has it name the parent's folder.)
set(WEFT_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/weft)
install(FILES ${WEFT_DOC_FILES} DESTINATION ${WEFT_DOC_DIR})
if(WEFT_STATIC_LLVM)
  find_file(WEFT_LLVM_LICENSE NAMES LICENSE.TXT
            PATHS ${LLVM_TOOLS_BINARY_DIR}/../build/utils/lit
                  ${LLVM_TOOLS_BINARY_DIR}/../share/doc/llvm
            NO_DEFAULT_PATH)
  if(WEFT_LLVM_LICENSE)
    install(FILES ${WEFT_LLVM_LICENSE} DESTINATION ${WEFT_DOC_DIR}
            RENAME LICENSE-LLVM.txt)
  else()
    message(STATUS "weft: no copy of LLVM's LICENSE.TXT found; NOTICE "
                   "names the license (Apache-2.0 WITH LLVM-exception)")
  endif()
endif()
