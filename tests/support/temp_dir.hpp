#pragma once
// A directory under the system temp folder, removed when the object goes out of scope.

#include <filesystem>
#include <string>
#include <string_view>

namespace clustersim::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory and returns its full path.
  std::filesystem::path write(std::string_view name, std::string_view text) const;

 private:
  std::filesystem::path path_;
};

// The repository root (for scenarios/ and test data).
std::filesystem::path source_dir();

}  // namespace clustersim::testing
