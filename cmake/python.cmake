# The Python module (python/, issue #22): roofline._roofline, built with pybind11 when Python's
# headers and pybind11 are found (Debian: python3-dev, pybind11-dev), and its pytest suite (label
# "python"). Included before the libraries: a shared module needs them position-independent.
# Left out of the sanitizer and fuzz builds: an ASan build's module only loads into a Python
# started with the sanitizer runtime preloaded.
#
# The tests run pytest with the interpreter the module is built for, so unless Python3_EXECUTABLE
# is given (scikit-build-core gives it), that interpreter is the first python3 on PATH that can
# import pytest (Debian's python3-pytest): a version manager's python3 earlier on PATH without
# pytest (pyenv's shims) is passed over, and without any, FindPython's choice stands.
if(NOT ROOFLINE_SANITIZE AND NOT ROOFLINE_FUZZ AND NOT DEFINED Python3_EXECUTABLE AND NOT SKBUILD)
  string(REPLACE ":" ";" _roofline_path "$ENV{PATH}")
  foreach(_dir IN LISTS _roofline_path)
    if(_dir AND EXISTS "${_dir}/python3")
      execute_process(COMMAND "${_dir}/python3" -c "import pytest" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(Python3_EXECUTABLE "${_dir}/python3" CACHE FILEPATH "Python interpreter the roofline module is built for")
        break()
      endif()
    endif()
  endforeach()
endif()

set(_python_default OFF)
if(NOT ROOFLINE_SANITIZE AND NOT ROOFLINE_FUZZ)
  find_package(Python3 3.8 QUIET COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND)
    find_package(pybind11 2.6 CONFIG QUIET)
    if(NOT pybind11_FOUND)
      # pip install . (pyproject.toml): pybind11 from PyPI, in the build's Python environment.
      execute_process(COMMAND ${Python3_EXECUTABLE} -m pybind11 --cmakedir OUTPUT_VARIABLE _pybind11_dir
                      OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
      if(_rc EQUAL 0)
        find_package(pybind11 2.6 CONFIG QUIET HINTS ${_pybind11_dir})
      endif()
    endif()
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(_python_default ON)
  endif()
endif()
option(ROOFLINE_PYTHON "Build the Python module roofline._roofline (python3-dev, pybind11-dev)" ${_python_default})
if(ROOFLINE_PYTHON)
  if(NOT pybind11_FOUND)
    message(FATAL_ERROR "ROOFLINE_PYTHON is ON but Python 3 development files or pybind11 were not found (apt-get install python3-dev pybind11-dev)")
  endif()
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  message(STATUS "roofline: Python module ON (${Python3_EXECUTABLE}, Python ${Python3_VERSION}, pybind11 ${pybind11_VERSION})")
else()
  message(STATUS "roofline: Python module OFF")
endif()
