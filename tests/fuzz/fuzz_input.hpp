#pragma once
// Shared by the fuzz targets: run a parser on the input; InputError is the expected way to reject
// bad input, anything else escaping is a bug and aborts the fuzzer.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "hardware/errors.hpp"

namespace clustersim::fuzz {

template <class Fn>
int run_parser(const std::uint8_t* data, std::size_t size, Fn&& fn) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    fn(text);
  } catch (const InputError&) {
    // Rejected with a message: the intended outcome for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "non-InputError exception escaped the parser: %s\n", e.what());
    std::abort();
  }
  return 0;
}

// A step that must succeed on input the parser accepted (writing it back, rendering it): any
// exception here, InputError included, is a bug.
template <class Fn>
void must_accept(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s failed on accepted input: %s\n", what, e.what());
    std::abort();
  }
}

}  // namespace clustersim::fuzz
