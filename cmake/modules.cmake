# One static library per source module: src/NAME/**.cpp -> fulgur_NAME.
# Files under a folder named avx2/ or avx512/ are compiled with that ISA's flags only;
# everything else stays baseline x86-64 so the binary runs anywhere and picks its
# kernels by CPUID at start-up (src/kernels/dispatch.cpp).
# -ffp-contract=off: GCC would otherwise fuse a*b+c into FMA where it likes (C++ defaults to
# fp-contract=fast), so SIMD code would round differently from its scalar twin and from
# itself across compiler versions. Kernels that want FMA call it explicitly.
set(FULGUR_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2 -ffp-contract=off)
set(FULGUR_AVX512_FLAGS -mavx2 -mfma -mf16c -mbmi2 -mavx512f -mavx512bw -mavx512vl
    -mavx512dq -mavx512vnni -ffp-contract=off)

function(fulgur_module name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT sources)  # a module whose first file has not landed yet
    add_library(fulgur_${name} INTERFACE)
    target_include_directories(fulgur_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(fulgur_${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(fulgur_${name} STATIC ${sources})
  target_include_directories(fulgur_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(fulgur_${name} PUBLIC ${ARG_DEPS})
  foreach(src ${sources})
    if(src MATCHES "/avx512/")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${FULGUR_AVX512_FLAGS}")
    elseif(src MATCHES "/avx2/")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${FULGUR_AVX2_FLAGS}")
    endif()
  endforeach()
endfunction()

# One GoogleTest binary per module: tests/NAME/*.cpp -> test_NAME, registered with ctest.
function(fulgur_tests name)
  cmake_parse_arguments(ARG "NEEDS_CLI" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_${name} PRIVATE ${ARG_DEPS} GTest::gtest_main)
  target_compile_definitions(test_${name} PRIVATE
      FULGUR_BINARY="$<TARGET_FILE:fulgur>" FULGUR_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      FULGUR_BUILD_DIR="${PROJECT_BINARY_DIR}")
  if(ARG_NEEDS_CLI)
    add_dependencies(test_${name} fulgur)  # runs the fulgur binary as a subprocess
  endif()
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
endfunction()
