# Warnings for fusebox's own targets (never for third-party code).
function(fusebox_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -pedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast
    -Wnon-virtual-dtor -Woverloaded-virtual
    $<$<BOOL:${FUSEBOX_WERROR}>:-Werror>)
endfunction()
