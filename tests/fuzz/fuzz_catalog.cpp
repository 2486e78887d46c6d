// Hardware catalog files: a user layer over the built-in catalog (parsed once).
#include "fuzz_input.hpp"
#include "hardware/catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const clustersim::hardware::Catalog builtin = clustersim::hardware::Catalog::load();
  return clustersim::fuzz::run_parser(data, size, [](std::string_view t) {
    const clustersim::EmbeddedFile f{"fuzz.json", t};
    (void)builtin.extended({&f, 1});
  });
}
