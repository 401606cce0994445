# The library's layers (docs/ARCHITECTURE.md).
#
# mt_layer(NAME DIR... [BELOW LAYER...]) makes the OBJECT library mt_NAME
# from the folders DIR (each folder's CMakeLists.txt adds its sources to
# ${MT_LAYER}) and appends its objects to MT_LAYER_OBJECTS, the library's.
# BELOW names the layers it may use; with them and everything beneath them,
# and nothing else, its objects are linked into a shared object with
# --no-undefined (mt_layer_check_NAME, part of every build): a call from a
# layer to one above it, or to a sibling it does not name, is then an
# undefined symbol and the build fails there.
set(MT_LAYER_OBJECTS "")
set(MT_LAYER_NAMES "")

function(mt_layer name)
  cmake_parse_arguments(L "" "" "BELOW" ${ARGN})
  set(target mt_${name})
  add_library(${target} OBJECT)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                       PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC PkgConfig::JANSSON PkgConfig::SQLITE3 PkgConfig::SODIUM
                                         PkgConfig::PCRE2 ${MEMTOOL_UNISTRING} Threads::Threads m)
  set(MT_LAYER ${target})
  foreach(dir ${L_UNPARSED_ARGUMENTS})
    add_subdirectory(${dir})
  endforeach()
  # Everything this layer stands on: the named layers and what they stand on.
  set(closure "")
  foreach(b ${L_BELOW})
    list(APPEND closure ${b} ${MT_LAYER_CLOSURE_${b}})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set(MT_LAYER_CLOSURE_${name} ${closure} PARENT_SCOPE)
  set(objects $<TARGET_OBJECTS:${target}>)
  foreach(b ${closure})
    list(APPEND objects $<TARGET_OBJECTS:mt_${b}>)
  endforeach()
  # Not under the sanitizers: clang leaves their runtimes to the program, so
  # a shared object of sanitized code has undefined symbols by design. The
  # plain and release builds check, and so does lint_layers in every build.
  if(NOT MEMTOOL_SANITIZE)
    add_library(mt_layer_check_${name} SHARED ${objects})
    target_link_libraries(mt_layer_check_${name} PRIVATE PkgConfig::JANSSON PkgConfig::SQLITE3
                          PkgConfig::SODIUM PkgConfig::PCRE2 ${MEMTOOL_UNISTRING} Threads::Threads m
                          ${CMAKE_DL_LIBS})
    target_link_options(mt_layer_check_${name} PRIVATE LINKER:--no-undefined)
    set_target_properties(mt_layer_check_${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY
                          ${PROJECT_BINARY_DIR}/layer-check)
  endif()
  set(MT_LAYER_OBJECTS ${MT_LAYER_OBJECTS} $<TARGET_OBJECTS:${target}> PARENT_SCOPE)
  set(MT_LAYER_NAMES ${MT_LAYER_NAMES} ${name} PARENT_SCOPE)
endfunction()

# mt_front_end(NAME DIR [BELOW LAYER...]): a front end above the library,
# built by DIR's CMakeLists.txt as it likes; BELOW is for the layer check
# (tests/lint/layers.py), which reads these calls from CMakeLists.txt.
function(mt_front_end name dir)
  add_subdirectory(${dir})
endfunction()
