// Typed errors for troupe. Library code throws these; only main() catches and prints.
#pragma once

#include <stdexcept>
#include <string>

namespace troupe {

// Base of every troupe error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A mistake in a workflow file or a command-line override. what() reads
// "file:line:col: message" when the position is known.
class ConfigError : public Error {
 public:
  ConfigError(std::string file, int line, int col, const std::string& message)
      : Error(Format(file, line, col, message)), file_(std::move(file)), line_(line), col_(col), message_(message) {}
  explicit ConfigError(const std::string& message) : Error(message), message_(message) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when unknown
  int col() const { return col_; }    // 1-based; 0 when unknown
  const std::string& message() const { return message_; }

 private:
  static std::string Format(const std::string& file, int line, int col, const std::string& m) {
    if (line <= 0) return file.empty() ? m : file + ": " + m;
    return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + m;
  }
  std::string file_;
  int line_ = 0;
  int col_ = 0;
  std::string message_;
};

class GameError : public Error {
 public:
  using Error::Error;
  // A parameter's value is wrong (validation points at that parameter).
  GameError(const std::string& message, std::string param) : Error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

class ModelError : public Error {
 public:
  using Error::Error;
};

class CheckpointError : public Error {
 public:
  using Error::Error;
};

// A tokenizer file that cannot be used, or text a tokenizer cannot take.
class TokenizerError : public Error {
 public:
  using Error::Error;
};

class CommsError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public Error {
 public:
  using Error::Error;
};

}  // namespace troupe
