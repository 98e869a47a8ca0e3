# Fuzz targets (tests/fuzz/<target>_target.cpp), each built two ways:
#  - in the normal build: petra_fuzz_replay_<target>, a plain driver running every file of
#    tests/fuzz/corpus/<target>/ through the target, one ctest case per target;
#  - with -DPETRA_FUZZ=ON (clang, its own build folder, CUDA off): petra_fuzz_<target>, the libFuzzer
#    binary, the target and the libraries it reads with instrumented (bench/fuzz/run.sh builds and runs it).
option(PETRA_FUZZ "Build the libFuzzer targets (needs clang)" OFF)

set(FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)
set(FUZZ_TARGETS idx cifar10 imagenet32 jpeg safetensors checkpoint config set messages)
set(FUZZ_LIBS_idx petra_datasets)
set(FUZZ_LIBS_cifar10 petra_datasets)
set(FUZZ_LIBS_imagenet32 petra_datasets)
set(FUZZ_LIBS_jpeg petra_datasets)
set(FUZZ_LIBS_safetensors petra_serialize)
set(FUZZ_LIBS_checkpoint petra_serialize)
set(FUZZ_LIBS_config petra_config)
set(FUZZ_LIBS_set petra_config)
set(FUZZ_LIBS_messages petra_messages)
# The checkpoint reader lives in petra_training, which pulls in every layer: its one source is enough.
set(FUZZ_SOURCES_checkpoint ${CMAKE_CURRENT_SOURCE_DIR}/training/checkpoint.cpp)

function(petra_fuzz_executable exe target)
  add_executable(${exe} ${ARGN} ${FUZZ_DIR}/${target}_target.cpp ${FUZZ_DIR}/scratch_file.cpp
                        ${FUZZ_SOURCES_${target}})
  target_include_directories(${exe} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${exe} PRIVATE ${FUZZ_LIBS_${target}} nlohmann_json::nlohmann_json)
endfunction()

if(PETRA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PETRA_FUZZ=ON needs clang (-DCMAKE_CXX_COMPILER=clang++-14)")
  endif()
  # Every sanitizer report aborts, so libFuzzer keeps the input that caused it.
  set(FUZZ_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -g -O1)
  foreach(lib petra_datasets petra_config petra_serialize petra_messages)
    target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link ${FUZZ_FLAGS})
    target_link_options(${lib} INTERFACE -fsanitize=address,undefined)
  endforeach()
  foreach(target ${FUZZ_TARGETS})
    petra_fuzz_executable(petra_fuzz_${target} ${target})
    target_compile_options(petra_fuzz_${target} PRIVATE -fsanitize=fuzzer ${FUZZ_FLAGS})
    target_link_options(petra_fuzz_${target} PRIVATE -fsanitize=fuzzer ${FUZZ_FLAGS})
  endforeach()
endif()

if(PETRA_FUZZ)
  return()  # the fuzz build folder holds the libFuzzer binaries only; the normal build replays
endif()
foreach(target ${FUZZ_TARGETS})
  petra_fuzz_executable(petra_fuzz_replay_${target} ${target} ${FUZZ_DIR}/replay_main.cpp)
  add_test(NAME "fuzz: ${target} replays its corpus"
           COMMAND petra_fuzz_replay_${target} ${FUZZ_DIR}/corpus/${target})
  set_tests_properties("fuzz: ${target} replays its corpus" PROPERTIES TIMEOUT 120)
endforeach()

# Writes the seed files of every corpus (run by hand: petra_fuzz_make_corpus tests/fuzz/corpus).
add_executable(petra_fuzz_make_corpus ${FUZZ_DIR}/make_corpus.cpp ${CMAKE_CURRENT_SOURCE_DIR}/training/checkpoint.cpp)
target_include_directories(petra_fuzz_make_corpus PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(petra_fuzz_make_corpus PRIVATE petra_datasets petra_config petra_serialize petra_messages
                      doctest::doctest nlohmann_json::nlohmann_json ${TURBOJPEG_LIBRARY} ZLIB::ZLIB)
# The dataset test helpers it borrows include doctest; no test is registered here.
target_compile_definitions(petra_fuzz_make_corpus PRIVATE DOCTEST_CONFIG_DISABLE)
