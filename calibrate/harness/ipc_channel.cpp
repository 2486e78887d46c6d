#include "calibrate/harness/ipc_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "calibrate/harness/harness_errors.hpp"

namespace clustersim::harness {

namespace {

constexpr std::uint32_t kMagic = 0x43534d43;  // "CSMC"
constexpr std::uint64_t kMaxPayload = 1ULL << 31;

using Clock = std::chrono::steady_clock;

void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw HarnessError(std::string("connection to the driver lost: ") + std::strerror(errno));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Reads exactly n bytes before `deadline`. Returns false on a clean EOF before the first byte.
bool read_all(int fd, void* data, std::size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw TestTimeout("no message from the peer in time");
    pollfd pfd{fd, POLLIN, 0};
    const int pr = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0) {
      if (errno == EINTR) continue;
      throw HarnessError(std::string("poll: ") + std::strerror(errno));
    }
    if (pr == 0) continue;
    const ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw HarnessError(std::string("connection lost: ") + std::strerror(errno));
    }
    if (r == 0) {
      if (got == 0) return false;
      throw HarnessError("connection closed in the middle of a message");
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace

void send_message(int fd, MessageType type, std::string_view payload) {
  std::uint32_t head[2] = {kMagic, static_cast<std::uint32_t>(type)};
  const std::uint64_t len = payload.size();
  std::string frame(sizeof(head) + sizeof(len), '\0');
  std::memcpy(frame.data(), head, sizeof(head));
  std::memcpy(frame.data() + sizeof(head), &len, sizeof(len));
  frame.append(payload);
  write_all(fd, frame.data(), frame.size());
}

std::optional<Message> receive_message(int fd, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::uint32_t head[2];
  if (!read_all(fd, head, sizeof(head), deadline)) return std::nullopt;
  std::uint64_t len = 0;
  read_all(fd, &len, sizeof(len), deadline);
  if (head[0] != kMagic || len > kMaxPayload) throw HarnessError("malformed message on the driver connection");
  Message m{static_cast<MessageType>(head[1]), std::string(len, '\0')};
  if (len > 0) read_all(fd, m.payload.data(), len, deadline);
  return m;
}

std::string encode_list(const std::vector<std::string>& items) {
  std::string out;
  const std::uint64_t n = items.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  for (const auto& s : items) {
    const std::uint64_t len = s.size();
    out.append(reinterpret_cast<const char*>(&len), sizeof(len));
    out.append(s);
  }
  return out;
}

std::vector<std::string> decode_list(std::string_view data) {
  auto take = [&](std::uint64_t& v) {
    if (data.size() < sizeof(v)) throw HarnessError("malformed list from the driver");
    std::memcpy(&v, data.data(), sizeof(v));
    data.remove_prefix(sizeof(v));
  };
  std::uint64_t n = 0;
  take(n);
  std::vector<std::string> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t len = 0;
    take(len);
    if (data.size() < len) throw HarnessError("malformed list from the driver");
    out.emplace_back(data.substr(0, len));
    data.remove_prefix(len);
  }
  return out;
}

std::string encode_result(Section section, std::string_view entry) {
  std::string out = section_name(section);
  out += '\n';
  out.append(entry);
  return out;
}

std::pair<Section, std::string> decode_result(std::string_view payload) {
  const auto nl = payload.find('\n');
  if (nl == std::string_view::npos) throw HarnessError("malformed result message");
  return {parse_section(std::string(payload.substr(0, nl))), std::string(payload.substr(nl + 1))};
}

HubClient::HubClient(const std::string& socket_path, int rank, double timeout_s) : timeout_s_(timeout_s) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) throw HarnessError("driver socket path too long: " + socket_path);
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  // The driver listens before it starts workers; the retries only cover a busy machine.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (true) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw HarnessError(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (Clock::now() > deadline) {
      throw HarnessError("cannot connect to the driver at " + socket_path + ": " + std::strerror(err));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  send(MessageType::HELLO, std::to_string(rank));
}

HubClient::~HubClient() {
  if (fd_ >= 0) ::close(fd_);
}

void HubClient::send(MessageType type, std::string_view payload) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  send_message(fd_, type, payload);
}

std::vector<std::string> HubClient::gather(const std::string& blob) {
  std::lock_guard<std::mutex> lock(gather_mutex_);
  send(MessageType::GATHER, blob);
  // Only GATHER_REPLY ever travels from the driver to a worker.
  auto reply = receive_message(fd_, timeout_s_);
  if (!reply) throw HarnessError("the driver closed the connection");
  if (reply->type != MessageType::GATHER_REPLY) throw HarnessError("unexpected message from the driver");
  return decode_list(reply->payload);
}

std::vector<std::string> ProcessGroup::allgather(const std::string& blob) {
  auto all = hub_.gather(blob);
  if (static_cast<int>(all.size()) != size_) throw HarnessError("the driver answered an all-gather with the wrong count");
  return all;
}

void HubSink::add(Section section, std::string entry_json) { hub_.send(MessageType::RESULT, encode_result(section, entry_json)); }

void HubSink::note(std::string failure) { hub_.send(MessageType::NOTE, failure); }

}  // namespace clustersim::harness
