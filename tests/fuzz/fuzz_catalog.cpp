// Hardware catalog files: a user layer over a base of the built-in GPUs, systems and fabrics
// (parsed once), which are what user instances, systems and overrides name. The base leaves out
// the built-in instances, prices and storage: copying the whole catalog for every input cost more
// than parsing the input (about 450 inputs/s under the sanitizers), and user files do not refer
// to those entries except prices, which then name an instance of their own layer.
#include <string_view>
#include <vector>

#include "fuzz_input.hpp"
#include "hardware/catalog.hpp"

namespace clustersim::hardware {
std::span<const EmbeddedFile> builtin_catalog_files();  // generated from hardware/catalog/*.json
}  // namespace clustersim::hardware

namespace {

clustersim::hardware::Catalog base_catalog() {
  std::vector<clustersim::EmbeddedFile> files;
  for (const auto& f : clustersim::hardware::builtin_catalog_files()) {
    const std::string_view p = f.path;
    if (p == "gpus.json" || p == "systems.json" || p == "fabrics.json") files.push_back(f);
  }
  return clustersim::hardware::Catalog::from_files(files);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const clustersim::hardware::Catalog base = base_catalog();
  return clustersim::fuzz::run_parser(data, size, [](std::string_view t) {
    const clustersim::EmbeddedFile f{"fuzz.json", t};
    (void)base.extended({&f, 1});
  });
}
