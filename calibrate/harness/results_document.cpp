#include "calibrate/harness/results_document.hpp"

#include "calibrate/harness/harness_errors.hpp"
#include "calibrate/harness/harness_json_writer.hpp"
#include "calibrate/harness/nccl_comm.hpp"

#ifndef CLUSTERSIM_HARNESS_VERSION
#define CLUSTERSIM_HARNESS_VERSION "unknown"
#endif

namespace clustersim::harness {

namespace {

// One element per line; an empty list stays "[]".
void write_list(JsonWriter& w, const std::vector<std::string>& items) {
  w.begin_array();
  for (const auto& e : items) w.newline().raw(e);
  if (!items.empty()) w.newline();
  w.end_array();
}

}  // namespace

ResultsDocument::ResultsDocument(const Options& opt, std::string launcher) : opt_(opt), launcher_(std::move(launcher)) {}

void ResultsDocument::add(Section section, std::string entry_json) {
  if (section == Section::ENVIRONMENT) {
    environment_ = std::move(entry_json);
  } else {
    sections_[section].push_back(std::move(entry_json));
  }
}

void ResultsDocument::add_run(const RunRecord& r) {
  JsonWriter w;
  w.begin_object()
      .field("section", section_name(r.section))
      .field("subrun", r.label)
      .field("status", r.status)
      .field("message", r.message)
      .field("elapsed_s", r.elapsed_s)
      .field("processes", r.processes);
  w.key("env").begin_object();
  for (const auto& [k, v] : r.env) w.field(k, v);
  w.end_object().end_object();
  runs_.push_back(w.take());
}

std::size_t ResultsDocument::count(Section section) const {
  const auto it = sections_.find(section);
  return it == sections_.end() ? 0 : it->second.size();
}

const std::vector<std::string>& ResultsDocument::entries(Section section) const {
  static const std::vector<std::string> none;
  const auto it = sections_.find(section);
  return it == sections_.end() ? none : it->second;
}

std::string ResultsDocument::render() const {
  JsonWriter w;
  w.begin_object();
  w.newline().field("schema_version", 1);
  w.newline().field("kind", "clustersim-calibration-results");
  w.newline().key("tool").begin_object()
      .field("name", "clustersim-calibrate")
      .field("version", CLUSTERSIM_HARNESS_VERSION)
      .field("command", opt_.command_line)
      .field("label", opt_.label)
      .field("launcher", launcher_)
      .field("nccl_version", nccl_runtime_version())
      .field("nvlink_centric_sched", opt_.nvlink_centric_sched)
      .field("alloc", opt_.alloc)
      .field("nonblocking", opt_.nonblocking)
      .end_object();
  w.newline().key("environment");
  if (environment_.empty()) {
    w.null();
  } else {
    w.raw(environment_);
  }
  for (const Section s : all_sections()) {
    if (s == Section::ENVIRONMENT) continue;
    w.newline().key(section_name(s));
    write_list(w, entries(s));
  }
  w.newline().key("runs");
  write_list(w, runs_);
  w.newline().key("failures");
  write_list(w, failures_);
  w.newline().end_object();
  std::string out = w.take();
  out.push_back('\n');
  return out;
}

void ResultsDocument::write(const std::string& path) const { write_text_file(path, render()); }

}  // namespace clustersim::harness
