#pragma once
// Where a test puts what it measured: one JSON object per entry of a results section, and notes on
// tests that failed, timed out or could not run. Entries travel as JSON text; the driver (or MPI
// rank 0) places them in the results document.

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // One entry of `section` (for Section::ENVIRONMENT: the whole environment object).
  virtual void add(Section section, std::string entry_json) = 0;
  // One element of the "failures" list: {"section", "subrun", "test", "status", "message"}.
  virtual void note(std::string failure_json) = 0;
};

// Keeps everything in memory (threads of one process share it; MPI ranks exchange its contents).
class MemorySink : public ResultSink {
 public:
  void add(Section section, std::string entry_json) override;
  void note(std::string failure_json) override;
  std::vector<std::pair<Section, std::string>> take_entries();
  std::vector<std::string> take_notes();

 private:
  std::mutex mutex_;
  std::vector<std::pair<Section, std::string>> entries_;
  std::vector<std::string> notes_;
};

// {"section": ..., "subrun": ..., "test": ..., "status": ..., "message": ...}
std::string failure_json(Section section, const std::string& subrun, const std::string& test, const std::string& status,
                         const std::string& message);

}  // namespace clustersim::harness
