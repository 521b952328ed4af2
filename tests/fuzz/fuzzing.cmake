# The fuzz build's two helpers, shared by tests/vin_gateway/CMakeLists.txt (the gateway's targets)
# and tests/fuzz/CMakeLists.txt (the simulator's and vpic-sim's): only used when VIN_GATEWAY_FUZZ is
# on (the `fuzz` preset, clang-16).
#
#   fusebox_fuzz_instrument(<library>...)
#       Compiles each library with libFuzzer's coverage (fuzzer-no-link) and ASan + UBSan, once
#       even when both files ask, so that the fuzzers are guided by the code they exercise and not
#       only by their own translation unit. Whatever links the library then links the sanitizers.
#   fusebox_add_fuzzer(<name> SOURCES <files>... LIBS <targets>...)
#       One libFuzzer executable in <build>/bin, warnings as for every fusebox target.
include_guard(GLOBAL)

function(fusebox_fuzz_instrument)
  foreach(lib IN LISTS ARGN)
    get_target_property(done ${lib} FUSEBOX_FUZZ_INSTRUMENTED)
    if(NOT done)
      target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
      target_link_options(${lib} INTERFACE -fsanitize=address,undefined)
      set_target_properties(${lib} PROPERTIES FUSEBOX_FUZZ_INSTRUMENTED ON)
    endif()
  endforeach()
endfunction()

function(fusebox_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  fusebox_set_warnings(${name})
endfunction()
