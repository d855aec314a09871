# ctest install_consumer: installs this build at a custom prefix, moves the install elsewhere, and builds and runs
# examples/hello_vector_add.c against it twice, as a user's program outside the tree would: through
# find_package(gpuws) in a CMake project, and through `pkg-config --cflags --libs gpuws` on a plain compiler line.
# Both must find the moved install, not the configure-time prefix. Run with cmake -P and:
#   BUILD_DIR   the gpuws build tree       SOURCE_DIR  the gpuws source tree     WORK  a scratch folder (emptied)
#   C_COMPILER  the compiler of the build  GENERATOR   its CMake generator       SANITIZE  GPUWS_SANITIZE ("" = none)
cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(installed "${WORK}/installed-here")
set(prefix "${WORK}/moved-there")
run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${installed}")
file(RENAME "${installed}" "${prefix}")

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()
set(ENV{GPUWS_BACKEND} cpu)

# find_package
file(WRITE "${WORK}/app/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(gpuws 0.2 REQUIRED)
add_executable(consumer \"${SOURCE_DIR}/examples/hello_vector_add.c\")
target_link_libraries(consumer PRIVATE gpuws::gpuws)
")
run("configuring a find_package(gpuws) project"
    ${CMAKE_COMMAND} -S "${WORK}/app" -B "${WORK}/app-build" -G "${GENERATOR}"
    "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_C_FLAGS=${flags}" "-DCMAKE_PREFIX_PATH=${prefix}")
run("building the find_package(gpuws) project" ${CMAKE_COMMAND} --build "${WORK}/app-build")
run("the find_package(gpuws) program" "${WORK}/app-build/consumer")
message(STATUS "find_package: ${last_output}")

# pkg-config
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pc_files "${prefix}/*/gpuws.pc")
list(LENGTH pc_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one gpuws.pc under ${prefix}, found: ${pc_files}")
endif()
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
run("pkg-config --cflags --libs gpuws" ${PKG_CONFIG} --cflags --libs gpuws)
string(STRIP "${last_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs gpuws: ${pc_flags}")
run("pkg-config --variable=libdir gpuws" ${PKG_CONFIG} --variable=libdir gpuws)
string(STRIP "${last_output}" libdir)
if(NOT EXISTS "${libdir}/libgpuws.so")
  message(FATAL_ERROR "pkg-config's libdir ${libdir} has no libgpuws.so: the .pc file does not describe ${prefix}")
endif()
separate_arguments(pc_list UNIX_COMMAND "${pc_flags}")
separate_arguments(flag_list UNIX_COMMAND "${flags}")
run("cc with pkg-config's flags"
    "${C_COMPILER}" ${flag_list} -o "${WORK}/consumer-pc" "${SOURCE_DIR}/examples/hello_vector_add.c" ${pc_list}
    "-Wl,-rpath,${libdir}")
run("the pkg-config program" "${WORK}/consumer-pc")
message(STATUS "pkg-config: ${last_output}")
file(REMOVE_RECURSE "${WORK}")
