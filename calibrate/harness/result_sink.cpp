#include "calibrate/harness/result_sink.hpp"

#include "calibrate/harness/harness_json_writer.hpp"

namespace clustersim::harness {

void MemorySink::add(Section section, std::string entry_json) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.emplace_back(section, std::move(entry_json));
}

void MemorySink::note(std::string failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  notes_.push_back(std::move(failure));
}

std::vector<std::pair<Section, std::string>> MemorySink::take_entries() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(entries_, {});
}

std::vector<std::string> MemorySink::take_notes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(notes_, {});
}

std::string failure_json(Section section, const std::string& subrun, const std::string& test, const std::string& status,
                         const std::string& message) {
  JsonWriter w;
  w.begin_object()
      .field("section", section_name(section))
      .field("subrun", subrun)
      .field("test", test)
      .field("status", status)
      .field("message", message)
      .end_object();
  return w.take();
}

}  // namespace clustersim::harness
