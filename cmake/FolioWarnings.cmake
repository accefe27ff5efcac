# Warnings for Folio's own targets; third-party headers come in as SYSTEM includes.
add_library(folio_warnings INTERFACE)
target_compile_options(folio_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                              -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wformat=2>)
if(FOLIO_WERROR)
    target_compile_options(folio_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
