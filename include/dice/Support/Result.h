//===- Result.h - a value or the located error that prevented it -*- C++ -*-===//
//
// The one result type of the libraries outside LLVM (the middle and the
// LibTorch half, DESIGN.md section 3). Those libraries are called from
// LLVM-built code compiled without exceptions, so they return errors as
// values; LLVM-built code keeps llvm::Expected, FailureOr and LogicalResult,
// and turns a dice::Error into a diagnostic at the boundary.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SUPPORT_RESULT_H
#define DICE_SUPPORT_RESULT_H

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dice {

/// Why an operation failed, located as precisely as its input allows.
struct Error {
  std::string file;    ///< the file, folder or database at fault; may be empty
  unsigned line = 0;   ///< 1-based; 0 when there is none
  unsigned column = 0; ///< 1-based; 0 when there is none (or no line)
  std::string key;     ///< the key, field, tensor or entry at fault; may be empty
  std::string message; ///< a sentence fragment: "is not a SQLite database"

  Error() = default;
  explicit Error(std::string message) : message(std::move(message)) {}
  Error(std::string file, std::string message)
      : file(std::move(file)), message(std::move(message)) {}
  Error(std::string file, unsigned line, unsigned column, std::string key,
        std::string message)
      : file(std::move(file)), line(line), column(column), key(std::move(key)),
        message(std::move(message)) {}

  /// `file:line:column: error: key: message`, the form compilers print; the
  /// parts that are unknown are left out.
  std::string format() const;

  /// The same without the severity, `file:line:column: key: message`: the
  /// error as it reads inside a diagnostic or another error's message. With
  /// no file (text parsed from memory) a line reads `line L, column C: `.
  std::string describe() const;

private:
  std::string location() const;
};

/// A `T`, or the `Error` that prevented it. Test it before use:
///
///   dice::Result<Config> config = loadConfigFile(path);
///   if (!config)
///     return config.error();
///   use(*config);
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : storage(std::in_place_index<1>, std::move(error)) {}

  explicit operator bool() const { return storage.index() == 0; }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  /// Moves the value out; the result must hold one.
  T take() { return std::move(std::get<0>(storage)); }

  const Error &error() const { return std::get<1>(storage); }

private:
  std::variant<T, Error> storage;
};

/// Success, or the `Error` of an operation that has no value.
template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : failure(std::move(error)) {}

  explicit operator bool() const { return !failure; }
  const Error &error() const { return *failure; }

private:
  std::optional<Error> failure;
};

using Status = Result<void>;

} // namespace dice

#endif // DICE_SUPPORT_RESULT_H
