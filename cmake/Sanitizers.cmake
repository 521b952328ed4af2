# FUSEBOX_SANITIZE: "address;undefined" (asan preset) or "thread" (tsan preset).
# Applied to every target of the build so that all code and tests are instrumented alike.
if(FUSEBOX_SANITIZE)
  list(JOIN FUSEBOX_SANITIZE "," _fusebox_sanitizers)
  # -O1 -g1: sanitizer builds exist to run the tests, and CI builds every target twice more
  # with them. Line tables are enough for the sanitizers' stack traces, and -O1 keeps them
  # readable; both compile much faster than RelWithDebInfo's -O2 -g (these options come after
  # the build type's flags on the command line, so they win).
  add_compile_options(-fsanitize=${_fusebox_sanitizers} -fno-omit-frame-pointer -O1 -g1)
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
