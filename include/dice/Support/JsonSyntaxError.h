//===- JsonSyntaxError.h - where a JSON text stops being JSON ---*- C++ -*-===//
//
// A SAX handler for nlohmann-json that accepts every value and records the
// first syntax error: its message (without nlohmann's "[json.exception...]"
// tag) and the offset nlohmann gives for it (one past the fault). Readers
// that report located errors parse with it; a streaming reader derives from
// it and overrides the events it checks. Header-only: its users link
// nlohmann-json themselves.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SUPPORT_JSONSYNTAXERROR_H
#define DICE_SUPPORT_JSONSYNTAXERROR_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace dice {

class JsonSyntaxError : public nlohmann::json_sax<nlohmann::json> {
public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &error) override {
    message = error.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (std::size_t close = message.find("] "); close != std::string::npos)
      message.erase(0, close + 2);
    offset = position;
    return false;
  }

  std::string message = "not JSON";
  /// nlohmann's position of the error: one past the faulty character.
  std::size_t offset = 0;
};

} // namespace dice

#endif // DICE_SUPPORT_JSONSYNTAXERROR_H
