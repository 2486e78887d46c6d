#pragma once
// Output files are written to a temporary name beside the target and renamed into place, so an
// interrupted run never leaves a half-written report, trace or profile.

#include <filesystem>
#include <string_view>

namespace clustersim {

// Writes `content` to `path` atomically. Throws InputError when the directory does not exist or
// is not writable (the user named it), RuntimeError on a failed write.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace clustersim
