// Parsing speed of unit strings and catalog loading (every command loads the catalog once).
#include <benchmark/benchmark.h>

#include "hardware/catalog.hpp"
#include "hardware/units.hpp"

namespace {

void BM_ParseBandwidth(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(clustersim::parse_bandwidth("3200 Gb/s"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseBandwidth);

void BM_CatalogLoad(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(clustersim::hardware::Catalog::load());
}
BENCHMARK(BM_CatalogLoad)->Unit(benchmark::kMillisecond);

}  // namespace
