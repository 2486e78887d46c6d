#include "calibrate/fit_input.hpp"

#include <utility>

#include "hardware/errors.hpp"
#include "sim/nccl/collective_predictor.hpp"

namespace clustersim::calibrate {

namespace {

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Adds files one at a time, so that a file's GPU is checked before the next file is read.
class Merger {
 public:
  void add(const std::string& path, const CalibrationResults& r) {
    if (first_path_.empty()) first_path_ = path;
    if (r.environment) {
      const std::string name = r.environment->gpu_name.value_or("");
      if (gpu_name_.empty()) gpu_name_ = name;
      if (!name.empty() && name != gpu_name_) {
        throw InputError(path, "/environment/gpu_name",
                         "expected results of one kind of GPU ('" + gpu_name_ + "'), got '" + name + "'");
      }
      const int gpus = r.environment->gpu_count.value_or(0);
      if (gpus > best_gpus_) {
        best_gpus_ = gpus;
        merged_.schema_version = r.schema_version;
        merged_.tool = r.tool;
        merged_.environment = r.environment;
      }
    }
    // Each file's launch structure stays with its series: the harness says it once for the file.
    const std::size_t first = merged_.collectives.size();
    append(merged_.collectives, r.collectives);
    for (std::size_t i = first; i < merged_.collectives.size(); ++i) {
      CollectiveSeries& c = merged_.collectives[i];
      c.session = files_;
      if (!c.threads_per_process) {
        c.threads_per_process = sim::nccl::harness_threads_per_process(r.tool.launcher.value_or(""), c.gpus_per_node);
      }
    }
    const std::size_t first_p2p = merged_.p2p.size();
    append(merged_.p2p, r.p2p);
    for (std::size_t i = first_p2p; i < merged_.p2p.size(); ++i) merged_.p2p[i].session = files_;
    ++files_;
    append(merged_.gemm, r.gemm);
    append(merged_.attention, r.attention);
    append(merged_.memory, r.memory);
    append(merged_.host, r.host);
    append(merged_.cpu_adam, r.cpu_adam);
    append(merged_.runs, r.runs);
    append(merged_.failures, r.failures);
  }

  CalibrationResults finish() {
    if (!merged_.environment) {
      throw InputError(first_path_, "/environment",
                       "expected at least one results file with an \"environment\" object");
    }
    return std::move(merged_);
  }

 private:
  CalibrationResults merged_;
  std::string first_path_;
  std::string gpu_name_;
  int best_gpus_ = -1;
  int files_ = 0;
};

std::string point_pointer(const char* section, std::size_t series, std::size_t point) {
  return std::string("/") + section + "/" + std::to_string(series) + "/points/" + std::to_string(point) +
         "/size_bytes";
}

constexpr int kMaxP2pGpu = 1 << 16;

void check_for_fit(const std::string& path, const CalibrationResults& r) {
  const std::string sized = "expected a size of at least 1 byte (a zero-byte point has no transfer to fit), got 0";
  for (std::size_t i = 0; i < r.collectives.size(); ++i) {
    const auto& points = r.collectives[i].points;
    for (std::size_t j = 0; j < points.size(); ++j) {
      if (points[j].size_bytes < 1) throw InputError(path, point_pointer("collectives", i, j), sized);
    }
  }
  for (std::size_t i = 0; i < r.p2p.size(); ++i) {
    const P2pSeries& s = r.p2p[i];
    for (const auto& [key, gpu] : {std::pair{"src", s.src}, std::pair{"dst", s.dst}}) {
      if (gpu > kMaxP2pGpu) {
        throw InputError(path, "/p2p/" + std::to_string(i) + "/" + key,
                         "expected a GPU index from 0 to " + std::to_string(kMaxP2pGpu) + ", got " +
                             std::to_string(gpu));
      }
    }
    for (std::size_t j = 0; j < s.points.size(); ++j) {
      if (s.points[j].size_bytes < 1) throw InputError(path, point_pointer("p2p", i, j), sized);
    }
  }
}

}  // namespace

CalibrationResults merge_calibration_results(const std::vector<LoadedResults>& files) {
  Merger m;
  for (const auto& f : files) m.add(f.path, f.results);
  return m.finish();
}

CalibrationResults load_fit_input(const std::vector<std::string>& paths) {
  Merger m;
  for (const auto& path : paths) {
    const CalibrationResults r = load_calibration_results(path);
    check_for_fit(path, r);
    m.add(path, r);
  }
  return m.finish();
}

}  // namespace clustersim::calibrate
