# ctest package_consumer (cmake/install.cmake): installs the build BUILD into WORK/prefix, then
# configures, builds and runs tests/consumer against that prefix alone.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix --config ${CONFIG}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} failed (${rc})")
endif()
foreach(f lib/cmake/roofline/rooflineConfig.cmake include/roofline/sim/analysis.hpp include/roofline/ops/unary_ops.def bin/roofline)
  file(GLOB found ${WORK}/prefix/${f} ${WORK}/prefix/lib*/${f})
  if(NOT EXISTS ${WORK}/prefix/${f} AND NOT found)
    message(FATAL_ERROR "the install tree has no ${f}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${WORK}/build -G ${GENERATOR}
                        -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${CONFIG} -DCMAKE_PREFIX_PATH=${WORK}/prefix
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer project failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer project failed (${rc})")
endif()
execute_process(COMMAND ${WORK}/build/app ${SOURCE}/examples/two-layer-mlp.json RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer's app failed (${rc})")
endif()
