#include "hardware/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "hardware/errors.hpp"

namespace clustersim {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  namespace fs = std::filesystem;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(path.string(), "", "cannot write: directory '" + dir.string() + "' does not exist");
  }
  if (fs::is_directory(path, ec)) throw InputError(path.string(), "", "cannot write: it is a directory");
  std::random_device rd;
  std::string tmp_name(".");  // built by appending: GCC 12 warns falsely on "." + std::string
  tmp_name.append(path.filename().string()).append(".tmp").append(std::to_string(rd()));
  const std::string tmp = (dir / tmp_name).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw InputError(path.string(), "", std::string("cannot write: ") + std::strerror(errno));
  }
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw RuntimeError(path.string() + ": write failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw RuntimeError(path.string() + ": write failed: " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw RuntimeError(path.string() + ": rename failed: " + why);
  }
}

}  // namespace clustersim
