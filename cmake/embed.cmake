# mt_embed(SYMBOL IN OUT): turn the text file IN into the C source OUT defining
# `const char SYMBOL[]` (NUL-terminated) and `const size_t SYMBOL_len`, so the
# installed binary needs nothing beside it. Done when CMake configures, and
# again whenever IN changes (it is a configure dependency), so OUT is an
# ordinary source file to every target in any directory.
function(mt_embed symbol in out)
  file(READ "${in}" hex HEX)
  string(LENGTH "${hex}" digits)
  math(EXPR len "${digits} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # Lines of 16 bytes, so the generated file stays readable.
  string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${in}")
  file(WRITE "${out}.tmp"
    "/* Generated from ${rel} by cmake/embed.cmake: do not edit. */\n"
    "#include <stddef.h>\n"
    "extern const char ${symbol}[];\n"
    "extern const size_t ${symbol}_len;\n"
    "const char ${symbol}[] = {\n    ${bytes}0x00};\n"
    "const size_t ${symbol}_len = ${len};\n")
  configure_file("${out}.tmp" "${out}" COPYONLY)
  file(REMOVE "${out}.tmp")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${in}")
endfunction()
