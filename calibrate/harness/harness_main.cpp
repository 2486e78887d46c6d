// clustersim-calibrate: the calibration harness (harness_roles.hpp says what each role does).

#include <cstdlib>
#include <exception>
#include <iostream>

#include "calibrate/harness/harness_roles.hpp"

int main(int argc, char** argv) {
  using namespace clustersim::harness;
  Options opt;
  try {
    opt = parse_options(argc, argv);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    if (what.empty()) {
      std::cout << usage_text();
      return 0;
    }
    std::cerr << "clustersim-calibrate: " << what << "\nRun with --help for usage.\n";
    return 2;
  }
  try {
    if (opt.worker) return run_worker(opt);
    if (opt.launcher == Launcher::MPI) return run_mpi(opt, argc, argv);
    return run_driver(opt, argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "clustersim-calibrate: " << e.what() << "\nRun with --help for usage.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clustersim-calibrate: failure: " << e.what() << '\n';
    return 1;
  }
}
