//===- ErrorOr.h - a value or a message saying why not ----------*- C++ -*-===//
//
// The model runtime returns errors as values across its public API: callers
// include LLVM-built code compiled without exceptions. Plain C++ only.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_ERROROR_H
#define DICE_MODEL_ERROROR_H

#include <string>
#include <utility>
#include <variant>

namespace dice {

/// Why an operation of the model runtime failed: a sentence naming the file
/// and, where there is one, the tensor or key at fault.
struct ModelError {
  std::string message;
};

/// A `T` or the `ModelError` that prevented it.
template <typename T> class ErrorOr {
public:
  ErrorOr(T value) : storage(std::move(value)) {}
  ErrorOr(ModelError error) : storage(std::move(error)) {}

  explicit operator bool() const { return std::holds_alternative<T>(storage); }
  T &operator*() { return std::get<T>(storage); }
  const T &operator*() const { return std::get<T>(storage); }
  T *operator->() { return &std::get<T>(storage); }
  const T *operator->() const { return &std::get<T>(storage); }
  const std::string &error() const {
    return std::get<ModelError>(storage).message;
  }

private:
  std::variant<T, ModelError> storage;
};

} // namespace dice

#endif // DICE_MODEL_ERROROR_H
