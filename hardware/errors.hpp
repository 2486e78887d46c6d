#pragma once
// Typed errors. Library code throws these and never exits or prints; cli/ maps them to exit codes:
// InputError -> 2 (bad input or usage), anything else -> 1 (runtime failure).

#include <stdexcept>
#include <string>

namespace clustersim {

// Bad user input: names the file, the JSON pointer (or flag) and what was expected.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string where, std::string message)
      : std::runtime_error(compose(file, where, message)),
        file_(std::move(file)),
        where_(std::move(where)),
        message_(std::move(message)) {}
  explicit InputError(std::string message) : InputError("", "", std::move(message)) {}

  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

  // The same error located in a file at a JSON pointer (or other place), keeping the message.
  InputError located(std::string file, std::string where) const {
    return InputError(file_.empty() ? std::move(file) : file_, where_.empty() ? std::move(where) : where_,
                      message_);
  }

 private:
  static std::string compose(const std::string& file, const std::string& where, const std::string& message) {
    std::string out;
    if (!file.empty()) out += file + ": ";
    if (!where.empty()) out += where + ": ";
    return out + message;
  }
  std::string file_;
  std::string where_;
  std::string message_;
};

// A failure that is not the user's input: a missing resource, an I/O error, a model that cannot run.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace clustersim
