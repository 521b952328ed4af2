// Boost.Asio (with its SSL support) and Boost.Beast, compiled once for every app.
//
// By default both libraries are header-only: every translation unit that includes them compiles
// their non-template parts again (the scheduler, the reactor, the HTTP parser's tables...). With
// BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION (set for everything that
// links app_boost_net, see CMakeLists.txt) those parts are declared only, and defined here.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
