#pragma once
// The results JSON of one run (calibrate/README.md describes it): tool, environment, one list per
// section, "runs" (one record per sub-run: status and elapsed time) and "failures" (tests that
// produced no measurement, and why). Rewritten atomically (temporary file, fsync, rename) after
// every sub-run, so a run that is interrupted leaves the last complete version.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/harness/harness_options.hpp"

namespace clustersim::harness {

struct RunRecord {
  Section section = Section::ENVIRONMENT;
  std::string label;
  std::vector<std::pair<std::string, std::string>> env;
  std::string status;  // ok, failed, timeout, skipped
  std::string message;
  double elapsed_s = 0;
  int processes = 0;
};

class ResultsDocument {
 public:
  ResultsDocument(const Options& opt, std::string launcher);

  void set_environment(std::string object_json) { environment_ = std::move(object_json); }
  void add(Section section, std::string entry_json);
  void add_failure(std::string failure_json) { failures_.push_back(std::move(failure_json)); }
  void add_run(const RunRecord& r);

  std::size_t count(Section section) const;
  const std::vector<std::string>& entries(Section section) const;
  std::size_t failure_count() const { return failures_.size(); }

  std::string render() const;
  // Throws HarnessError naming the path when the file cannot be written.
  void write(const std::string& path) const;

 private:
  const Options& opt_;
  std::string launcher_;
  std::string environment_;
  std::map<Section, std::vector<std::string>> sections_;
  std::vector<std::string> runs_;
  std::vector<std::string> failures_;
};

}  // namespace clustersim::harness
