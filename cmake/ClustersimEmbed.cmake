# clustersim_embed(TARGET <lib> FUNCTION <qualified function name> HEADER <header> BASE <dir> FILES <f>...)
#
# Compiles data files into a library so the binary needs no install path: the generated source
# defines `std::span<const clustersim::EmbeddedFile> <FUNCTION>()`, each entry holding the file's
# path relative to BASE and its text. The source is regenerated when any listed file changes.
set(_clustersim_embed_script ${CMAKE_CURRENT_LIST_DIR}/EmbedFiles.cmake)

function(clustersim_embed)
  cmake_parse_arguments(E "" "TARGET;FUNCTION;HEADER;BASE" "FILES" ${ARGN})
  string(MAKE_C_IDENTIFIER "${E_FUNCTION}" _id)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/embedded_${_id}.cpp)
  set(_list ${CMAKE_CURRENT_BINARY_DIR}/embedded_${_id}.files)
  string(REPLACE ";" "\n" _lines "${E_FILES}")
  file(WRITE ${_list}.tmp "${_lines}\n")
  file(COPY_FILE ${_list}.tmp ${_list} ONLY_IF_DIFFERENT)
  add_custom_command(
    OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${_out} -DLIST=${_list} -DBASE=${E_BASE}
            -DFUNCTION=${E_FUNCTION} -DHEADER=${E_HEADER} -P ${_clustersim_embed_script}
    DEPENDS ${E_FILES} ${_list} ${_clustersim_embed_script}
    COMMENT "Embedding ${E_FUNCTION}"
    VERBATIM)
  target_sources(${E_TARGET} PRIVATE ${_out})
  # Each file is one raw string literal, some longer than the 65,536 characters the standard asks
  # compilers to accept; GCC and Clang take them, Clang with a warning that says only that.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang|GNU")
    set_source_files_properties(${_out} PROPERTIES COMPILE_OPTIONS -Wno-overlength-strings)
  endif()
endfunction()
