#include "calibrate/harness/host_group.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "calibrate/harness/harness_errors.hpp"

namespace clustersim::harness {

namespace {

template <class T>
std::string to_blob(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}

template <class T>
T from_blob(const std::string& s) {
  if (s.size() != sizeof(T)) throw HarnessError("host group: a rank sent a value of the wrong size");
  T v;
  std::memcpy(&v, s.data(), sizeof(T));
  return v;
}

template <class T, class Fold>
T fold_all(HostGroup& g, std::string_view tag, T v, Fold fold) {
  const auto all = tagged_allgather(g, tag, to_blob(v));
  T acc = from_blob<T>(all.at(0));
  for (std::size_t i = 1; i < all.size(); ++i) acc = fold(acc, from_blob<T>(all[i]));
  return acc;
}

}  // namespace

std::vector<std::string> tagged_allgather(HostGroup& g, std::string_view tag, const std::string& blob) {
  std::string framed(tag);
  framed.push_back('\0');
  framed += blob;
  auto all = g.allgather(framed);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto nul = all[r].find('\0');
    const std::string_view got = nul == std::string::npos ? std::string_view() : std::string_view(all[r]).substr(0, nul);
    if (nul == std::string::npos || got != tag) {
      throw HarnessError("host group out of step: rank " + std::to_string(g.rank()) + " at '" + std::string(tag) +
                         "', rank " + std::to_string(r) + " at '" + std::string(got) + "'");
    }
    all[r].erase(0, nul + 1);
  }
  return all;
}

void barrier(HostGroup& g, std::string_view tag) { tagged_allgather(g, tag, std::string()); }

std::string broadcast(HostGroup& g, std::string_view tag, int root, const std::string& blob) {
  auto all = tagged_allgather(g, tag, g.rank() == root ? blob : std::string());
  return std::move(all.at(static_cast<std::size_t>(root)));
}

double allreduce_sum(HostGroup& g, std::string_view tag, double v) {
  return fold_all(g, tag, v, [](double a, double b) { return a + b; });
}
double allreduce_max(HostGroup& g, std::string_view tag, double v) {
  return fold_all(g, tag, v, [](double a, double b) { return std::max(a, b); });
}
double allreduce_min(HostGroup& g, std::string_view tag, double v) {
  return fold_all(g, tag, v, [](double a, double b) { return std::min(a, b); });
}
std::int64_t allreduce_sum(HostGroup& g, std::string_view tag, std::int64_t v) {
  return fold_all(g, tag, v, [](std::int64_t a, std::int64_t b) { return a + b; });
}
bool any_of(HostGroup& g, std::string_view tag, bool v) {
  return fold_all(g, tag, static_cast<std::int32_t>(v ? 1 : 0), [](std::int32_t a, std::int32_t b) { return a | b; }) != 0;
}

std::vector<std::string> ThreadGroup::allgather(const std::string& blob) {
  std::unique_lock<std::mutex> lock(state_.mutex_);
  if (state_.broken_) throw HarnessError("thread group: another thread failed");
  const std::uint64_t generation = state_.generation_;
  state_.slots_[static_cast<std::size_t>(rank_)] = blob;
  if (++state_.arrived_ == state_.size_) {
    state_.result_ = state_.slots_;
    state_.arrived_ = 0;
    ++state_.generation_;
    state_.cv_.notify_all();
    return state_.result_;
  }
  const auto timeout = std::chrono::duration<double>(state_.timeout_s_);
  const bool done = state_.cv_.wait_for(lock, timeout, [&] { return state_.generation_ != generation || state_.broken_; });
  if (state_.generation_ != generation) return state_.result_;
  state_.broken_ = true;
  state_.cv_.notify_all();
  if (!done) throw TestTimeout("thread group: the other threads did not arrive in time");
  throw HarnessError("thread group: another thread failed");
}

void ThreadGroup::break_group() {
  std::lock_guard<std::mutex> lock(state_.mutex_);
  state_.broken_ = true;
  state_.cv_.notify_all();
}

}  // namespace clustersim::harness
