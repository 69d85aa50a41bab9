// Catch2's main() and its runner, compiled once for every test executable (they link
// fsrr_catch_main): 20-28 s of compile time each, seven times over, before they shared it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
