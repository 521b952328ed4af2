# FUSEBOX_SANITIZE: "address;undefined" (asan preset) or "thread" (tsan preset).
# Applied to every target of the build so that all code and tests are instrumented alike.
if(FUSEBOX_SANITIZE)
  list(JOIN FUSEBOX_SANITIZE "," _fusebox_sanitizers)
  # Sanitizer builds exist to run the tests, and CI builds every target twice more with them, so
  # they are built for compile speed: line tables (-g1) are enough for the sanitizers' stack
  # traces. ASan + UBSan at -O0: gcc instruments Asio and Beast's templates at -O1 at about twice
  # the cost of -O0, and the tests (waiting on sockets and timers) barely notice the slower code.
  # TSan stays at -O1: it slows code down much more, and its long stress runs are CPU-bound.
  # These options come after the build type's flags on the command line, so they win.
  if("thread" IN_LIST FUSEBOX_SANITIZE)
    set(_fusebox_sanitizer_opt -O1)
  else()
    set(_fusebox_sanitizer_opt -O0)
  endif()
  add_compile_options(-fsanitize=${_fusebox_sanitizers} -fno-omit-frame-pointer
                      ${_fusebox_sanitizer_opt} -g1)
  add_link_options(-fsanitize=${_fusebox_sanitizers})
  if("undefined" IN_LIST FUSEBOX_SANITIZE)
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  # With sanitizers, gcc 12 inlines Boost.Asio's coroutine frame allocator (aligned_alloc) next to
  # the frame's own operator delete (which frees it correctly) and misreports the pair as
  # mismatched. The warning stays on in the dev and release builds.
  add_compile_options(-Wno-mismatched-new-delete)
  if("thread" IN_LIST FUSEBOX_SANITIZE)
    # gcc warns that atomic_thread_fence is not supported by TSan; Asio uses it.
    add_compile_options(-Wno-tsan)
  endif()
endif()
