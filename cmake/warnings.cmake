# Project-wide warning set (STYLE.md). Applied through gf_set_warnings(target) so that
# third-party code (GoogleTest macros expand in our files, but their sources are not ours)
# is unaffected.
function(gf_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wnon-virtual-dtor -Wold-style-cast)
  if(GF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Every test binary: one per module, discovered by CTest, with a label.
function(gf_add_test name)
  cmake_parse_arguments(T "" "LABEL" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  gf_set_warnings(${name})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  # PROPERTIES: more test properties, e.g. FIXTURES_REQUIRED and ENVIRONMENT.
  gtest_discover_tests(${name} PROPERTIES LABELS ${T_LABEL} ${T_PROPERTIES} DISCOVERY_TIMEOUT 60)
endfunction()
