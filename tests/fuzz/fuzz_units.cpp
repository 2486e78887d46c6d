// Unit strings: sizes, durations, bandwidths, FLOP rates and counts, nccl-tests sizes, and the
// plan file's durations, dollar amounts and catalog prices.
#include "fuzz_input.hpp"
#include "hardware/catalog.hpp"
#include "hardware/units.hpp"
#include "models/plan_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  auto each = [](auto parse, std::string_view t) {
    try {
      (void)parse(t);
    } catch (const InputError&) {
    }
  };
  return fuzz::run_parser(data, size, [&](std::string_view t) {
    each(parse_bytes, t);
    each(parse_duration, t);
    each(parse_bandwidth, t);
    each(parse_flop_rate, t);
    each(parse_flop_count, t);
    each(parse_nccl_size, t);
    each(models::parse_plan_duration, t);
    each(models::parse_usd, t);
    each(hardware::parse_hourly_price, t);
  });
}
