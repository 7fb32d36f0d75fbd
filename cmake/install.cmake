# The CMake package (issue #22): `cmake --install BUILD --prefix P` installs the headers of ops/,
# model/, sim/ and reports/ under P/include/roofline, their static libraries, the roofline
# executable, and P/lib/cmake/roofline/rooflineConfig.cmake, so that a project does
#   find_package(roofline 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE roofline::roofline)
# and includes "sim/analysis.hpp", "reports/report.hpp", ... as the project's own code does.
# roofline::roofline is the reports layer and everything below it (docs/ARCHITECTURE.md);
# roofline::roofline_ops, _model, _sim and _reports are the layers one by one.
# tests/consumer/ builds such a project against an installed tree (ctest: package_consumer).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(roofline_library INTERFACE)
target_link_libraries(roofline_library INTERFACE roofline_reports)
set_target_properties(roofline_library PROPERTIES EXPORT_NAME roofline)
add_library(roofline::roofline ALIAS roofline_library)

install(TARGETS roofline_ops roofline_model roofline_sim roofline_reports roofline_library
        EXPORT rooflineTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/roofline)
install(TARGETS roofline RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET roofline-gpu)
  install(TARGETS roofline-gpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET roofline_onnx_reader)
  install(TARGETS roofline_onnx_reader LIBRARY DESTINATION ${CMAKE_INSTALL_BINDIR})  # beside roofline, which loads it
endif()
foreach(layer ops model sim reports)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/roofline/${layer}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.def" PATTERN "cuda" EXCLUDE PATTERN "defs" EXCLUDE PATTERN "hardware" EXCLUDE
          PATTERN "clusters" EXCLUDE)
endforeach()
install(FILES ${ROOFLINE_DEFINED_OPS_INC} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/roofline/ops)  # ops/op_kind.hpp includes it
install(EXPORT rooflineTargets NAMESPACE roofline:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/roofline)
set(ROOFLINE_PACKAGE_WITH_ONNX ${ROOFLINE_WITH_ONNX})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rooflineConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/rooflineConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/roofline)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rooflineConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rooflineConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/rooflineConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/roofline)

# The consumer project, built against this build installed into a scratch prefix. Not in the
# sanitizer build (the consumer links without the sanitizer runtime) nor the fuzz build.
if(ROOFLINE_BUILD_TESTS AND NOT ROOFLINE_SANITIZE AND NOT ROOFLINE_FUZZ)
  add_test(NAME package_consumer
           COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR} -DWORK=${CMAKE_BINARY_DIR}/tests/tmp/consumer
                   -DSOURCE=${PROJECT_SOURCE_DIR} -DGENERATOR=${CMAKE_GENERATOR} -DCXX=${CMAKE_CXX_COMPILER}
                   -DCONFIG=$<CONFIG> -P ${PROJECT_SOURCE_DIR}/tests/consumer/run.cmake)
  set_tests_properties(package_consumer PROPERTIES LABELS package)
endif()
