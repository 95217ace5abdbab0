# Turns a file into a C++ source holding its bytes: run as
#   cmake -DINPUT=file -DOUTPUT=out.cpp -DNAME=kSymbol -DNAMESPACE=ns -P embed_file.cmake
# and the source defines `extern const unsigned char NAME[]` and `extern const size_t NAME_size`
# in namespace NAMESPACE (the bytes are followed by a NUL not counted in the size).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n_hex)
math(EXPR n "${n_hex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line keeps the generated source readable and compilers happy.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" bytes "${bytes}")
get_filename_component(src_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${src_name} by cmake/embed_file.cmake; do not edit.\n"
  "#include <cstddef>\n\nnamespace ${NAMESPACE} {\n\n"
  "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_size;\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
  "const size_t ${NAME}_size = ${n};\n\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
