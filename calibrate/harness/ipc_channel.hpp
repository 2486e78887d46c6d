#pragma once
// Messages between the driver and the worker processes it starts, over a Unix socket the driver
// listens on. A frame is [u32 magic][u32 type][u64 length][payload]. The driver is the hub: every
// worker connects and says HELLO; an all-gather is a GATHER from each rank answered by one
// GATHER_REPLY to each; RESULT and NOTE carry measured entries and failures; DONE ends a worker.
//
// The hub outlives its workers, so a worker that crashes or hangs takes nothing with it: the driver
// sees the closed socket or the missed deadline, kills the rest of the sub-run and goes on.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/harness/host_group.hpp"
#include "calibrate/harness/result_sink.hpp"

namespace clustersim::harness {

enum class MessageType : std::uint32_t { HELLO = 1, GATHER = 2, GATHER_REPLY = 3, RESULT = 4, NOTE = 5, DONE = 6 };

struct Message {
  MessageType type;
  std::string payload;
};

// Throws HarnessError on a broken connection.
void send_message(int fd, MessageType type, std::string_view payload);
// Waits at most timeout_s for a whole message; nullopt when the peer closed the connection.
// Throws TestTimeout when nothing complete arrived in time.
std::optional<Message> receive_message(int fd, double timeout_s);

std::string encode_list(const std::vector<std::string>& items);
std::vector<std::string> decode_list(std::string_view data);

// RESULT payload: the section's results-JSON name, a newline, the entry.
std::string encode_result(Section section, std::string_view entry);
std::pair<Section, std::string> decode_result(std::string_view payload);

// The worker's end of the connection. Thread-safe: threads of one process share it.
class HubClient {
 public:
  HubClient(const std::string& socket_path, int rank, double timeout_s);
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  void send(MessageType type, std::string_view payload);
  std::vector<std::string> gather(const std::string& blob);

 private:
  int fd_ = -1;
  double timeout_s_;
  std::mutex send_mutex_;
  std::mutex gather_mutex_;
};

// One rank per process; the all-gather goes through the driver.
class ProcessGroup : public HostGroup {
 public:
  ProcessGroup(HubClient& hub, int rank, int size) : hub_(hub), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> allgather(const std::string& blob) override;

 private:
  HubClient& hub_;
  int rank_;
  int size_;
};

// Sends entries and notes to the driver as soon as they exist.
class HubSink : public ResultSink {
 public:
  explicit HubSink(HubClient& hub) : hub_(hub) {}
  void add(Section section, std::string entry_json) override;
  void note(std::string failure_json) override;

 private:
  HubClient& hub_;
};

}  // namespace clustersim::harness
