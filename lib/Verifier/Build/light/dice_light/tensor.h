// The light tensor API: the part of LibTorch's C++ API that kernel
// candidates use around their kernels, with only CUDA headers underneath.
//
// nvcc spends about 50 s of CPU on the real torch headers for a candidate
// whose own code takes a second; this header takes a fraction of that.
// Everything lives in namespace dice_light and is reached as torch::, at::
// and c10:: through using-directives, so a light library's symbols never
// mangle like LibTorch's. What needs the real tensor is an out-of-line call
// into libDiceLightBridge.so (dice_light/bridge.h). A candidate that needs
// more than this fails to compile here and is rebuilt with the real headers.
#pragma once

#include "dice_light/bridge.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// No <string>, <sstream>, <iostream> or <stdexcept>: together they add
// about 0.7 s of nvcc time (cudafe++, cicc and gcc each parse them) to a
// build whose floor is 0.9 s. Messages are built in detail::Message, and
// the stream operators below are templates over any stream, so a
// candidate that includes <iostream> itself can still print these types.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace dice_light {

//===----------------------------------------------------------------------===//
// Errors and checks
//===----------------------------------------------------------------------===//

namespace detail {
/// A message under construction: what TORCH_CHECK's arguments are written
/// to (c10::str's ostringstream in LibTorch). Converts to any string type
/// constructible from (pointer, length), so `std::string s = c10::str(...)`
/// works where the candidate includes <string>.
class Message {
public:
  Message() = default;
  Message(const char *text) { append(text, std::strlen(text)); }
  Message(const Message &other) { append(other.data(), other.size_); }
  Message(Message &&other) noexcept
      : buffer_(other.buffer_), size_(other.size_), capacity_(other.capacity_) {
    other.buffer_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  Message &operator=(Message other) noexcept {
    std::swap(buffer_, other.buffer_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }
  ~Message() { std::free(buffer_); }

  const char *data() const { return buffer_ ? buffer_ : ""; }
  const char *c_str() const { return data(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  template <typename S, typename = std::enable_if_t<
                            std::is_constructible<S, const char *, size_t>::value>>
  operator S() const {
    return S(data(), size_);
  }

  void append(const char *text, size_t length) {
    if (size_ + length + 1 > capacity_) {
      size_t grown = capacity_ ? capacity_ : 64;
      while (grown < size_ + length + 1)
        grown *= 2;
      char *bigger = static_cast<char *>(std::realloc(buffer_, grown));
      if (!bigger)
        return; // out of memory: the message is cut short, nothing worse
      buffer_ = bigger;
      capacity_ = grown;
    }
    std::memcpy(buffer_ + size_, text, length);
    size_ += length;
    buffer_[size_] = '\0';
  }

  Message &operator<<(const char *text) {
    append(text ? text : "(null)", std::strlen(text ? text : "(null)"));
    return *this;
  }
  Message &operator<<(char c) {
    append(&c, 1);
    return *this;
  }
  Message &operator<<(bool value) { return *this << (value ? "1" : "0"); }
  Message &operator<<(const Message &other) {
    append(other.data(), other.size_);
    return *this;
  }
  Message &operator<<(const void *pointer) { return format("%p", pointer); }
  /// Integers as ostream prints them (char types above print as text).
  template <typename T, std::enable_if_t<std::is_integral<T>::value &&
                                             !std::is_same<T, bool>::value &&
                                             !std::is_same<T, char>::value,
                                         int> = 0>
  Message &operator<<(T value) {
    if (std::is_signed<T>::value)
      return format("%lld", static_cast<long long>(value));
    return format("%llu", static_cast<unsigned long long>(value));
  }
  /// Floating point as ostream's default (6 significant digits, %g).
  template <typename T,
            std::enable_if_t<std::is_floating_point<T>::value, int> = 0>
  Message &operator<<(T value) {
    return format("%g", static_cast<double>(value));
  }
  /// std::string and std::string_view, when the candidate includes them.
  template <typename S,
            std::enable_if_t<std::is_same<decltype(std::declval<const S &>().data()),
                                          const char *>::value,
                             int> = 0>
  Message &operator<<(const S &text) {
    append(text.data(), text.size());
    return *this;
  }

private:
  template <typename T> Message &format(const char *spec, T value) {
    char digits[64];
    int length = std::snprintf(digits, sizeof digits, spec, value);
    if (length > 0)
      append(digits, static_cast<size_t>(length) < sizeof digits
                         ? static_cast<size_t>(length)
                         : sizeof digits - 1);
    return *this;
  }

  char *buffer_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

inline void appendAll(Message &) {}
template <typename T, typename... Rest>
void appendAll(Message &out, const T &first, const Rest &...rest) {
  out << first;
  appendAll(out, rest...);
}
} // namespace detail

/// What TORCH_CHECK throws (c10::Error in LibTorch). The generated entry
/// turns it into a c10::Error raised by the bridge.
class Error : public std::exception {
public:
  explicit Error(detail::Message message) : message_(std::move(message)) {}
  explicit Error(const char *message) : message_(message) {}
  const char *what() const noexcept override { return message_.data(); }
  const char *what_without_backtrace() const noexcept { return what(); }
  const detail::Message &msg() const { return message_; }

private:
  detail::Message message_;
};

template <typename... Args> detail::Message str(const Args &...args) {
  detail::Message out;
  detail::appendAll(out, args...);
  return out;
}

namespace detail {
[[noreturn]] inline void fail(const char *condition, const Message &message) {
  if (message.empty())
    throw Error(str("Expected ", condition, " to be true, but got false."));
  throw Error(message);
}

/// Throws the bridge's message when a bridge call failed.
inline void checkBridge(int rc) {
  if (rc != 0)
    throw Error(dice_light_error_message());
}
} // namespace detail

//===----------------------------------------------------------------------===//
// Scalar types and 16-bit floats
//===----------------------------------------------------------------------===//

/// c10::ScalarType's numbering, which the bridge relies on.
enum class ScalarType : int8_t {
  Byte = 0,
  Char = 1,
  Short = 2,
  Int = 3,
  Long = 4,
  Half = 5,
  Float = 6,
  Double = 7,
  Bool = 11,
  BFloat16 = 15,
  Undefined = 28,
};

constexpr ScalarType kByte = ScalarType::Byte, kUInt8 = ScalarType::Byte,
                     kChar = ScalarType::Char, kInt8 = ScalarType::Char,
                     kShort = ScalarType::Short, kInt16 = ScalarType::Short,
                     kInt = ScalarType::Int, kInt32 = ScalarType::Int,
                     kLong = ScalarType::Long, kInt64 = ScalarType::Long,
                     kHalf = ScalarType::Half, kFloat16 = ScalarType::Half,
                     kFloat = ScalarType::Float, kFloat32 = ScalarType::Float,
                     kDouble = ScalarType::Double, kFloat64 = ScalarType::Double,
                     kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16;

inline const char *toString(ScalarType type) {
  switch (type) {
  case ScalarType::Byte: return "Byte";
  case ScalarType::Char: return "Char";
  case ScalarType::Short: return "Short";
  case ScalarType::Int: return "Int";
  case ScalarType::Long: return "Long";
  case ScalarType::Half: return "Half";
  case ScalarType::Float: return "Float";
  case ScalarType::Double: return "Double";
  case ScalarType::Bool: return "Bool";
  case ScalarType::BFloat16: return "BFloat16";
  default: return "UNKNOWN_SCALAR";
  }
}

/// Prints on any stream: a detail::Message, or std::ostream where the
/// candidate includes <ostream>.
template <typename Stream, typename = decltype(std::declval<Stream &>() << "")>
Stream &operator<<(Stream &out, ScalarType type) {
  out << toString(type);
  return out;
}

inline size_t elementSize(ScalarType type) {
  switch (type) {
  case ScalarType::Byte: case ScalarType::Char: case ScalarType::Bool: return 1;
  case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
  case ScalarType::Int: case ScalarType::Float: return 4;
  case ScalarType::Long: case ScalarType::Double: return 8;
  default: return 0;
  }
}

inline bool isFloatingType(ScalarType type) {
  return type == kHalf || type == kFloat || type == kDouble || type == kBFloat16;
}

/// c10::Half: fp16 storage with float arithmetic, layout-compatible with
/// __half. The conversions are explicit intrinsics because candidates are
/// compiled with __CUDA_NO_HALF_CONVERSIONS__, as torch extensions are.
struct alignas(2) Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float value)
      : x(__half_as_ushort(__float2half_rn(value))) {}
  __host__ __device__ Half(__half value) : x(__half_as_ushort(value)) {}
  __host__ __device__ operator float() const {
    return __half2float(__ushort_as_half(x));
  }
  __host__ __device__ operator __half() const { return __ushort_as_half(x); }
};

/// c10::BFloat16, layout-compatible with __nv_bfloat16.
struct alignas(2) BFloat16 {
  unsigned short x;
  BFloat16() = default;
  __host__ __device__ BFloat16(float value)
      : x(__bfloat16_as_ushort(__float2bfloat16_rn(value))) {}
  __host__ __device__ BFloat16(__nv_bfloat16 value)
      : x(__bfloat16_as_ushort(value)) {}
  __host__ __device__ operator float() const {
    return __bfloat162float(__ushort_as_bfloat16(x));
  }
  __host__ __device__ operator __nv_bfloat16() const {
    return __ushort_as_bfloat16(x);
  }
};

// c10's arithmetic rules: two 16-bit floats give their type, a float or
// double operand gives that type, an integer gives the 16-bit type.
#define DICE_LIGHT_REDUCED_FLOAT_OPS(T)                                        \
  __host__ __device__ inline T operator+(T a, T b) { return float(a) + float(b); } \
  __host__ __device__ inline T operator-(T a, T b) { return float(a) - float(b); } \
  __host__ __device__ inline T operator*(T a, T b) { return float(a) * float(b); } \
  __host__ __device__ inline T operator/(T a, T b) { return float(a) / float(b); } \
  __host__ __device__ inline T operator-(T a) { return -float(a); }            \
  __host__ __device__ inline T &operator+=(T &a, T b) { return a = a + b; }    \
  __host__ __device__ inline T &operator-=(T &a, T b) { return a = a - b; }    \
  __host__ __device__ inline T &operator*=(T &a, T b) { return a = a * b; }    \
  __host__ __device__ inline T &operator/=(T &a, T b) { return a = a / b; }    \
  __host__ __device__ inline float operator+(T a, float b) { return float(a) + b; } \
  __host__ __device__ inline float operator-(T a, float b) { return float(a) - b; } \
  __host__ __device__ inline float operator*(T a, float b) { return float(a) * b; } \
  __host__ __device__ inline float operator/(T a, float b) { return float(a) / b; } \
  __host__ __device__ inline float operator+(float a, T b) { return a + float(b); } \
  __host__ __device__ inline float operator-(float a, T b) { return a - float(b); } \
  __host__ __device__ inline float operator*(float a, T b) { return a * float(b); } \
  __host__ __device__ inline float operator/(float a, T b) { return a / float(b); } \
  __host__ __device__ inline float &operator+=(float &a, T b) { return a += float(b); } \
  __host__ __device__ inline float &operator-=(float &a, T b) { return a -= float(b); } \
  __host__ __device__ inline float &operator*=(float &a, T b) { return a *= float(b); } \
  __host__ __device__ inline float &operator/=(float &a, T b) { return a /= float(b); } \
  __host__ __device__ inline double operator+(T a, double b) { return double(float(a)) + b; } \
  __host__ __device__ inline double operator-(T a, double b) { return double(float(a)) - b; } \
  __host__ __device__ inline double operator*(T a, double b) { return double(float(a)) * b; } \
  __host__ __device__ inline double operator/(T a, double b) { return double(float(a)) / b; } \
  __host__ __device__ inline double operator+(double a, T b) { return a + double(float(b)); } \
  __host__ __device__ inline double operator-(double a, T b) { return a - double(float(b)); } \
  __host__ __device__ inline double operator*(double a, T b) { return a * double(float(b)); } \
  __host__ __device__ inline double operator/(double a, T b) { return a / double(float(b)); } \
  __host__ __device__ inline T operator+(T a, int b) { return a + T(float(b)); } \
  __host__ __device__ inline T operator-(T a, int b) { return a - T(float(b)); } \
  __host__ __device__ inline T operator*(T a, int b) { return a * T(float(b)); } \
  __host__ __device__ inline T operator/(T a, int b) { return a / T(float(b)); } \
  __host__ __device__ inline T operator+(int a, T b) { return T(float(a)) + b; } \
  __host__ __device__ inline T operator-(int a, T b) { return T(float(a)) - b; } \
  __host__ __device__ inline T operator*(int a, T b) { return T(float(a)) * b; } \
  __host__ __device__ inline T operator/(int a, T b) { return T(float(a)) / b; }

DICE_LIGHT_REDUCED_FLOAT_OPS(Half)
DICE_LIGHT_REDUCED_FLOAT_OPS(BFloat16)
#undef DICE_LIGHT_REDUCED_FLOAT_OPS

template <typename Stream, typename = decltype(std::declval<Stream &>() << "")>
Stream &operator<<(Stream &out, Half value) {
  out << float(value);
  return out;
}
template <typename Stream, typename = decltype(std::declval<Stream &>() << "")>
Stream &operator<<(Stream &out, BFloat16 value) {
  out << float(value);
  return out;
}

template <typename T> struct CppTypeToScalarType;
#define DICE_LIGHT_SCALAR(CPP, NAME)                                           \
  template <> struct CppTypeToScalarType<CPP> {                                \
    static constexpr ScalarType value = ScalarType::NAME;                      \
  };
DICE_LIGHT_SCALAR(uint8_t, Byte)
DICE_LIGHT_SCALAR(int8_t, Char)
DICE_LIGHT_SCALAR(int16_t, Short)
DICE_LIGHT_SCALAR(int, Int)
DICE_LIGHT_SCALAR(int64_t, Long)
DICE_LIGHT_SCALAR(Half, Half)
DICE_LIGHT_SCALAR(float, Float)
DICE_LIGHT_SCALAR(double, Double)
DICE_LIGHT_SCALAR(bool, Bool)
DICE_LIGHT_SCALAR(BFloat16, BFloat16)
#undef DICE_LIGHT_SCALAR

template <ScalarType S> struct ScalarTypeToCPPType;
#define DICE_LIGHT_CPP(CPP, NAME)                                              \
  template <> struct ScalarTypeToCPPType<ScalarType::NAME> { using type = CPP; };
DICE_LIGHT_CPP(uint8_t, Byte)
DICE_LIGHT_CPP(int8_t, Char)
DICE_LIGHT_CPP(int16_t, Short)
DICE_LIGHT_CPP(int, Int)
DICE_LIGHT_CPP(int64_t, Long)
DICE_LIGHT_CPP(Half, Half)
DICE_LIGHT_CPP(float, Float)
DICE_LIGHT_CPP(double, Double)
DICE_LIGHT_CPP(bool, Bool)
DICE_LIGHT_CPP(BFloat16, BFloat16)
#undef DICE_LIGHT_CPP
template <ScalarType S>
using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<S>::type;

/// caffe2::TypeMeta, as Tensor::dtype() returns it.
class TypeMeta {
public:
  constexpr TypeMeta(ScalarType type = ScalarType::Float) : type_(type) {}
  ScalarType toScalarType() const { return type_; }
  size_t itemsize() const { return elementSize(type_); }
  const char *name() const { return toString(type_); }
  operator ScalarType() const { return type_; }
  friend bool operator==(TypeMeta a, TypeMeta b) { return a.type_ == b.type_; }
  friend bool operator!=(TypeMeta a, TypeMeta b) { return a.type_ != b.type_; }
  friend bool operator==(TypeMeta a, ScalarType b) { return a.type_ == b; }
  friend bool operator!=(TypeMeta a, ScalarType b) { return a.type_ != b; }
  friend bool operator==(ScalarType a, TypeMeta b) { return a == b.type_; }
  friend bool operator!=(ScalarType a, TypeMeta b) { return a != b.type_; }

private:
  ScalarType type_;
};

inline ScalarType typeMetaToScalarType(TypeMeta meta) {
  return meta.toScalarType();
}

//===----------------------------------------------------------------------===//
// Devices and options
//===----------------------------------------------------------------------===//

/// c10::DeviceType's numbering.
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA;
using DeviceIndex = int8_t;

class Device {
public:
  Device(DeviceType type, DeviceIndex index = -1) : type_(type), index_(index) {}
  DeviceType type() const { return type_; }
  DeviceIndex index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  detail::Message str() const {
    return has_index() ? dice_light::str(is_cuda() ? "cuda:" : "cpu:", int(index_))
                       : dice_light::str(is_cuda() ? "cuda" : "cpu");
  }
  friend bool operator==(const Device &a, const Device &b) {
    return a.type_ == b.type_ && a.index_ == b.index_;
  }
  friend bool operator!=(const Device &a, const Device &b) { return !(a == b); }

private:
  DeviceType type_;
  DeviceIndex index_;
};

template <typename Stream, typename = decltype(std::declval<Stream &>() << "")>
Stream &operator<<(Stream &out, const Device &device) {
  out << device.str().c_str();
  return out;
}

enum class MemoryFormat : int8_t { Contiguous, Preserve };

class TensorOptions {
public:
  TensorOptions() = default;
  TensorOptions(ScalarType type) { dtype_ = type; }
  TensorOptions(TypeMeta type) { dtype_ = type.toScalarType(); }
  TensorOptions(Device device) { device_ = device; }
  TensorOptions(DeviceType type) { device_ = Device(type); }

  TensorOptions dtype(ScalarType type) const {
    TensorOptions copy = *this;
    copy.dtype_ = type;
    return copy;
  }
  TensorOptions dtype(TypeMeta type) const { return dtype(type.toScalarType()); }
  template <typename T> TensorOptions dtype() const {
    return dtype(CppTypeToScalarType<T>::value);
  }
  TensorOptions device(Device device) const {
    TensorOptions copy = *this;
    copy.device_ = device;
    return copy;
  }
  TensorOptions device(DeviceType type, DeviceIndex index = -1) const {
    return device(Device(type, index));
  }
  TensorOptions device_index(DeviceIndex index) const {
    return device(Device(DeviceType::CUDA, index));
  }
  /// Autograd does not reach a kernel library; accepted and ignored.
  TensorOptions requires_grad(bool = true) const { return *this; }

  TypeMeta dtype() const { return TypeMeta(dtype_.value_or(kFloat)); }
  Device device() const { return device_.value_or(Device(kCPU)); }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }

private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
};

inline TensorOptions dtype(ScalarType type) { return TensorOptions().dtype(type); }
template <typename T> TensorOptions dtype() { return TensorOptions().dtype<T>(); }
inline TensorOptions device(Device device) { return TensorOptions().device(device); }

//===----------------------------------------------------------------------===//
// IntArrayRef
//===----------------------------------------------------------------------===//

/// c10::IntArrayRef: a view of int64_t values owned elsewhere.
class IntArrayRef {
public:
  using value_type = int64_t;
  using iterator = const int64_t *;
  using const_iterator = const int64_t *;

  constexpr IntArrayRef() = default;
  IntArrayRef(const int64_t &one) : data_(&one), size_(1) {}
  constexpr IntArrayRef(const int64_t *data, size_t size)
      : data_(data), size_(size) {}
  IntArrayRef(const std::vector<int64_t> &values)
      : data_(values.data()), size_(values.size()) {}
  // The list lives until the end of the full expression, as with
  // c10::IntArrayRef; GCC warns about the pattern all the same.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(const std::initializer_list<int64_t> &values)
      : data_(values.begin()), size_(values.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  const int64_t *begin() const { return data_; }
  const int64_t *end() const { return data_ + size_; }
  const int64_t *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t &front() const { return data_[0]; }
  const int64_t &back() const { return data_[size_ - 1]; }
  const int64_t &operator[](size_t i) const { return data_[i]; }
  const int64_t &at(size_t i) const {
    if (i >= size_)
      throw Error(str("index ", i, " out of range for an array of ", size_));
    return data_[i];
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool equals(IntArrayRef other) const {
    if (size_ != other.size_)
      return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != other.data_[i])
        return false;
    return true;
  }
  friend bool operator==(IntArrayRef a, IntArrayRef b) { return a.equals(b); }
  friend bool operator!=(IntArrayRef a, IntArrayRef b) { return !a.equals(b); }
  friend bool operator==(IntArrayRef a, const std::vector<int64_t> &b) {
    return a.equals(b);
  }
  friend bool operator!=(IntArrayRef a, const std::vector<int64_t> &b) {
    return !a.equals(b);
  }
  friend bool operator==(const std::vector<int64_t> &a, IntArrayRef b) {
    return b.equals(a);
  }
  friend bool operator!=(const std::vector<int64_t> &a, IntArrayRef b) {
    return !b.equals(a);
  }

private:
  const int64_t *data_ = nullptr;
  size_t size_ = 0;
};

template <typename Stream, typename = decltype(std::declval<Stream &>() << "")>
Stream &operator<<(Stream &out, IntArrayRef values) {
  out << "[";
  for (size_t i = 0; i < values.size(); ++i)
    out << (i ? ", " : "") << values[i];
  out << "]";
  return out;
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

/// at::Tensor over a bridge handle: one reference to a c10::TensorImpl.
class Tensor {
public:
  Tensor() = default;
  Tensor(const Tensor &other) : impl_(other.impl_) {
    if (impl_)
      dice_light_retain(impl_);
  }
  Tensor(Tensor &&other) noexcept : impl_(other.impl_) { other.impl_ = nullptr; }
  Tensor &operator=(const Tensor &other) {
    Tensor copy(other);
    std::swap(impl_, copy.impl_);
    return *this;
  }
  Tensor &operator=(Tensor &&other) noexcept {
    std::swap(impl_, other.impl_);
    return *this;
  }
  ~Tensor() {
    if (impl_)
      dice_light_release(impl_);
  }

  /// Takes over the reference `handle` owns.
  static Tensor adopt(DiceLightHandle handle) {
    Tensor tensor;
    tensor.impl_ = handle;
    return tensor;
  }
  /// Shares a handle the caller keeps.
  static Tensor borrow(DiceLightHandle handle) {
    if (handle)
      dice_light_retain(handle);
    return adopt(handle);
  }
  /// Gives up the reference, for the caller to own.
  DiceLightHandle release() && {
    DiceLightHandle handle = impl_;
    impl_ = nullptr;
    return handle;
  }

  /// The handle, still owned by this tensor.
  DiceLightHandle unsafeHandle() const { return impl_; }

  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const { return dice_light_dim(checked()); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return dice_light_numel(checked()); }
  IntArrayRef sizes() const {
    return IntArrayRef(dice_light_sizes(checked()), static_cast<size_t>(dim()));
  }
  IntArrayRef strides() const {
    return IntArrayRef(dice_light_strides(checked()), static_cast<size_t>(dim()));
  }
  int64_t size(int64_t d) const { return sizes()[wrap(d)]; }
  int64_t stride(int64_t d) const { return strides()[wrap(d)]; }
  int64_t storage_offset() const { return dice_light_storage_offset(checked()); }
  ScalarType scalar_type() const {
    return static_cast<ScalarType>(dice_light_scalar_type(checked()));
  }
  TypeMeta dtype() const { return TypeMeta(scalar_type()); }
  int64_t element_size() const {
    return static_cast<int64_t>(elementSize(scalar_type()));
  }
  int64_t itemsize() const { return element_size(); }
  size_t nbytes() const { return static_cast<size_t>(numel() * element_size()); }
  Device device() const {
    return Device(static_cast<DeviceType>(dice_light_device_type(checked())),
                  static_cast<DeviceIndex>(dice_light_device_index(checked())));
  }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  int64_t get_device() const { return is_cuda() ? device().index() : -1; }
  TensorOptions options() const {
    return TensorOptions().dtype(scalar_type()).device(device());
  }
  bool is_contiguous(MemoryFormat = MemoryFormat::Contiguous) const {
    return dice_light_is_contiguous(checked()) != 0;
  }
  bool is_floating_point() const { return isFloatingType(scalar_type()); }

  void *data_ptr() const { return dice_light_data_ptr(checked()); }
  void *mutable_data_ptr() const { return data_ptr(); }
  const void *const_data_ptr() const { return data_ptr(); }
  template <typename T> T *data_ptr() const {
    ScalarType expected = CppTypeToScalarType<std::remove_cv_t<T>>::value;
    if (scalar_type() != expected)
      throw Error(str("expected scalar type ", expected, " but found ",
                      scalar_type()));
    return static_cast<T *>(data_ptr());
  }
  template <typename T> T *mutable_data_ptr() const { return data_ptr<T>(); }
  template <typename T> const T *const_data_ptr() const {
    return data_ptr<std::remove_const_t<T>>();
  }
  template <typename T> T *data() const { return data_ptr<T>(); }

  Tensor contiguous(MemoryFormat = MemoryFormat::Contiguous) const {
    DiceLightHandle out = nullptr;
    detail::checkBridge(dice_light_contiguous(checked(), &out));
    return adopt(out);
  }
  Tensor view(IntArrayRef shape) const { return reshapeImpl(shape, false); }
  Tensor reshape(IntArrayRef shape) const { return reshapeImpl(shape, true); }

private:
  DiceLightHandle checked() const {
    if (!impl_)
      throw Error("the tensor is undefined");
    return impl_;
  }
  size_t wrap(int64_t d) const {
    int64_t rank = dim();
    int64_t wrapped = d < 0 ? d + rank : d;
    if (wrapped < 0 || wrapped >= rank)
      throw Error(str("Dimension out of range (expected to be in range of [",
                      -rank, ", ", rank - 1, "], but got ", d, ")"));
    return static_cast<size_t>(wrapped);
  }
  Tensor reshapeImpl(IntArrayRef shape, bool copyIfNeeded) const {
    DiceLightHandle out = nullptr;
    detail::checkBridge(dice_light_view(checked(), shape.data(),
                                        static_cast<int64_t>(shape.size()),
                                        copyIfNeeded, &out));
    return adopt(out);
  }

  DiceLightHandle impl_ = nullptr;
};

//===----------------------------------------------------------------------===//
// Factories
//===----------------------------------------------------------------------===//

namespace detail {
inline Tensor create(const Tensor *like, IntArrayRef sizes,
                     const TensorOptions &options, bool fill, double value) {
  DiceLightHandle out = nullptr;
  int scalarType = options.has_dtype()
                       ? static_cast<int>(options.dtype().toScalarType())
                       : -1;
  int deviceType = options.has_device()
                       ? static_cast<int>(options.device().type())
                       : -1;
  int deviceIndex = options.has_device() ? options.device().index() : -1;
  int rc = dice_light_new(like ? like->unsafeHandle() : nullptr, sizes.data(),
                          static_cast<int64_t>(sizes.size()), scalarType,
                          deviceType, deviceIndex, fill ? 1 : 0, value, &out);
  checkBridge(rc);
  return Tensor::adopt(out);
}
} // namespace detail

inline Tensor empty(IntArrayRef sizes, const TensorOptions &options = {}) {
  return detail::create(nullptr, sizes, options, false, 0);
}
inline Tensor zeros(IntArrayRef sizes, const TensorOptions &options = {}) {
  return detail::create(nullptr, sizes, options, true, 0);
}
inline Tensor ones(IntArrayRef sizes, const TensorOptions &options = {}) {
  return detail::create(nullptr, sizes, options, true, 1);
}
inline Tensor full(IntArrayRef sizes, double value,
                   const TensorOptions &options = {}) {
  return detail::create(nullptr, sizes, options, true, value);
}
inline Tensor empty_like(const Tensor &like, const TensorOptions &options = {}) {
  return detail::create(&like, like.sizes(), options, false, 0);
}
inline Tensor zeros_like(const Tensor &like, const TensorOptions &options = {}) {
  return detail::create(&like, like.sizes(), options, true, 0);
}
inline Tensor ones_like(const Tensor &like, const TensorOptions &options = {}) {
  return detail::create(&like, like.sizes(), options, true, 1);
}
inline Tensor full_like(const Tensor &like, double value,
                        const TensorOptions &options = {}) {
  return detail::create(&like, like.sizes(), options, true, value);
}

inline std::optional<Device> device_of(const Tensor &tensor) {
  if (!tensor.defined())
    return std::nullopt;
  return tensor.device();
}

//===----------------------------------------------------------------------===//
// CUDA: streams and device guards
//===----------------------------------------------------------------------===//

namespace cuda {

class CUDAStream {
public:
  explicit CUDAStream(cudaStream_t stream, DeviceIndex index)
      : stream_(stream), index_(index) {}
  cudaStream_t stream() const { return stream_; }
  operator cudaStream_t() const { return stream_; }
  DeviceIndex device_index() const { return index_; }
  Device device() const { return Device(kCUDA, index_); }

private:
  cudaStream_t stream_;
  DeviceIndex index_;
};

inline CUDAStream getCurrentCUDAStream(DeviceIndex index = -1) {
  void *stream = nullptr;
  detail::checkBridge(dice_light_current_stream(index, &stream));
  return CUDAStream(static_cast<cudaStream_t>(stream), index);
}
inline CUDAStream getDefaultCUDAStream(DeviceIndex index = -1) {
  return CUDAStream(nullptr, index);
}

inline DeviceIndex current_device() {
  int device = 0;
  detail::checkBridge(dice_light_exchange_device(-1, &device));
  return static_cast<DeviceIndex>(device);
}

/// Makes a device current for its scope and restores the previous one.
class OptionalCUDAGuard {
public:
  OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(std::optional<Device> device) { set(device); }
  explicit OptionalCUDAGuard(DeviceIndex index) { set_index(index); }
  OptionalCUDAGuard(const OptionalCUDAGuard &) = delete;
  OptionalCUDAGuard &operator=(const OptionalCUDAGuard &) = delete;
  ~OptionalCUDAGuard() { reset(); }

  void set_device(Device device) { set(device); }
  void reset_device(Device device) { set(device); }
  void set_index(DeviceIndex index) {
    int previous = -1;
    detail::checkBridge(dice_light_exchange_device(index, &previous));
    if (!original_)
      original_ = static_cast<DeviceIndex>(previous);
    current_ = index;
  }
  std::optional<Device> original_device() const {
    return original_ ? std::optional<Device>(Device(kCUDA, *original_))
                     : std::nullopt;
  }
  std::optional<Device> current_device() const {
    return current_ ? std::optional<Device>(Device(kCUDA, *current_))
                    : std::nullopt;
  }
  void reset() {
    if (original_) {
      int ignored = -1;
      dice_light_exchange_device(*original_, &ignored);
      original_.reset();
      current_.reset();
    }
  }

private:
  void set(std::optional<Device> device) {
    if (device && device->is_cuda() && device->has_index())
      set_index(device->index());
  }
  std::optional<DeviceIndex> original_, current_;
};

class CUDAGuard : public OptionalCUDAGuard {
public:
  explicit CUDAGuard(Device device) : OptionalCUDAGuard(device) {}
  explicit CUDAGuard(DeviceIndex index) : OptionalCUDAGuard(index) {}
};

} // namespace cuda

using DeviceGuard = cuda::OptionalCUDAGuard;

//===----------------------------------------------------------------------===//
// The generated entry and registration
//===----------------------------------------------------------------------===//

namespace detail {
inline char *copyMessage(const char *text) {
  size_t size = std::strlen(text) + 1;
  char *copy = static_cast<char *>(std::malloc(size));
  if (copy)
    std::memcpy(copy, text, size);
  return copy;
}

inline void storeResults(std::vector<Tensor> results, DiceLightHandle **outputs,
                         size_t *count) {
  *outputs = static_cast<DiceLightHandle *>(
      std::malloc(sizeof(DiceLightHandle) * (results.empty() ? 1 : results.size())));
  if (!*outputs)
    throw std::bad_alloc();
  *count = results.size();
  for (size_t i = 0; i < results.size(); ++i)
    (*outputs)[i] = std::move(results[i]).release();
}
inline void storeResults(Tensor result, DiceLightHandle **outputs, size_t *count) {
  std::vector<Tensor> one;
  one.push_back(std::move(result));
  storeResults(std::move(one), outputs, count);
}

/// Runs `call` (dice_forward on the inputs) under the entry's contract.
template <typename Call>
int runEntry(Call call, DiceLightHandle **outputs, size_t *count, char **error) {
  *outputs = nullptr;
  *count = 0;
  *error = nullptr;
  try {
    storeResults(call(), outputs, count);
    return 0;
  } catch (const std::exception &e) {
    *error = copyMessage(e.what());
  } catch (...) {
    *error = copyMessage("dice_forward threw an exception that is not a "
                         "std::exception");
  }
  return 1;
}

/// Registers the library's operator while it is loaded.
class Registration {
public:
  Registration(const char *name, const char *schema, size_t numInputs,
               bool returnsList, DiceLightEntry entry) {
    if (dice_light_register(name, schema, numInputs, returnsList ? 1 : 0, entry,
                            &handle_) != 0)
      // A load must not abort the process; the missing operator reports
      // the failure to whoever looks it up.
      std::fprintf(stderr, "dice: cannot register dice::%s: %s\n", name,
                   dice_light_error_message());
  }
  Registration(const Registration &) = delete;
  Registration &operator=(const Registration &) = delete;
  ~Registration() {
    if (handle_)
      dice_light_unregister(handle_);
  }

private:
  void *handle_ = nullptr;
};
} // namespace detail

} // namespace dice_light

//===----------------------------------------------------------------------===//
// The names candidates spell
//===----------------------------------------------------------------------===//

namespace c10 {
using namespace dice_light;
using std::nullopt;
template <typename T> using optional = std::optional<T>;
using Stream = dice_light::cuda::CUDAStream;
} // namespace c10
namespace at {
using namespace dice_light;
} // namespace at
namespace torch {
using namespace dice_light;
} // namespace torch
namespace caffe2 {
using dice_light::TypeMeta;
} // namespace caffe2

#define TORCH_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      ::dice_light::detail::fail(#cond, ::dice_light::str(__VA_ARGS__));       \
  } while (false)
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define AT_ASSERTM(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define AT_ASSERT(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define AT_ERROR(...) ::dice_light::detail::fail("false", ::dice_light::str(__VA_ARGS__))
#define TORCH_WARN(...)                                                        \
  (std::fprintf(stderr, "Warning: %s\n", ::dice_light::str(__VA_ARGS__).c_str()))

#define C10_CUDA_CHECK(expr)                                                   \
  do {                                                                         \
    cudaError_t dice_light_status = (expr);                                    \
    if (dice_light_status != cudaSuccess)                                      \
      ::dice_light::detail::fail(                                              \
          #expr, ::dice_light::str("CUDA error: ",                             \
                                   cudaGetErrorString(dice_light_status)));    \
  } while (false)
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())

#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST __host__
#define C10_LAUNCH_BOUNDS_1(max) __launch_bounds__(max)
#define C10_WARP_SIZE 32
#define C10_UNUSED [[maybe_unused]]
#define C10_LIKELY(x) __builtin_expect(static_cast<bool>(x), 1)
#define C10_UNLIKELY(x) __builtin_expect(static_cast<bool>(x), 0)

//===----------------------------------------------------------------------===//
// AT_DISPATCH
//===----------------------------------------------------------------------===//

#define DICE_LIGHT_DISPATCH_CASE(S, ...)                                       \
  case S: {                                                                    \
    using scalar_t [[maybe_unused]] = ::dice_light::ScalarTypeToCPPTypeT<S>;   \
    return __VA_ARGS__();                                                      \
  }
#define DICE_LIGHT_DISPATCH(TYPE, NAME, CASES)                                 \
  [&] {                                                                        \
    const ::dice_light::ScalarType dice_light_type = (TYPE);                   \
    switch (dice_light_type) {                                                 \
      CASES                                                                    \
    default:                                                                   \
      ::dice_light::detail::fail(                                              \
          "dispatch", ::dice_light::str('"', NAME, "\" not implemented for '", \
                                        dice_light_type, "'"));                \
    }                                                                          \
  }()

#define DICE_LIGHT_FLOATING(...)                                               \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Double, __VA_ARGS__)      \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Float, __VA_ARGS__)
#define DICE_LIGHT_INTEGRAL(...)                                               \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Byte, __VA_ARGS__)        \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Char, __VA_ARGS__)        \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Int, __VA_ARGS__)         \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Long, __VA_ARGS__)        \
  DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Short, __VA_ARGS__)

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                            \
  DICE_LIGHT_DISPATCH(TYPE, NAME, DICE_LIGHT_FLOATING(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                   \
  DICE_LIGHT_DISPATCH(                                                         \
      TYPE, NAME,                                                              \
      DICE_LIGHT_FLOATING(__VA_ARGS__) DICE_LIGHT_DISPATCH_CASE(               \
          ::dice_light::ScalarType::Half, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(S1, TYPE, NAME, ...)                    \
  DICE_LIGHT_DISPATCH(TYPE, NAME,                                              \
                      DICE_LIGHT_FLOATING(__VA_ARGS__)                         \
                          DICE_LIGHT_DISPATCH_CASE(S1, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(S1, S2, TYPE, NAME, ...)               \
  DICE_LIGHT_DISPATCH(TYPE, NAME,                                              \
                      DICE_LIGHT_FLOATING(__VA_ARGS__)                         \
                          DICE_LIGHT_DISPATCH_CASE(S1, __VA_ARGS__)            \
                              DICE_LIGHT_DISPATCH_CASE(S2, __VA_ARGS__))
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...)                    \
  DICE_LIGHT_DISPATCH(                                                         \
      TYPE, NAME,                                                              \
      DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::Half, __VA_ARGS__)    \
          DICE_LIGHT_DISPATCH_CASE(::dice_light::ScalarType::BFloat16,         \
                                   __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...)                            \
  DICE_LIGHT_DISPATCH(TYPE, NAME, DICE_LIGHT_INTEGRAL(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                                 \
  DICE_LIGHT_DISPATCH(TYPE, NAME,                                              \
                      DICE_LIGHT_FLOATING(__VA_ARGS__)                         \
                          DICE_LIGHT_INTEGRAL(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND(S1, TYPE, NAME, ...)                         \
  DICE_LIGHT_DISPATCH(TYPE, NAME,                                              \
                      DICE_LIGHT_FLOATING(__VA_ARGS__)                         \
                          DICE_LIGHT_INTEGRAL(__VA_ARGS__)                     \
                              DICE_LIGHT_DISPATCH_CASE(S1, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND2(S1, S2, TYPE, NAME, ...)                    \
  DICE_LIGHT_DISPATCH(                                                         \
      TYPE, NAME,                                                              \
      DICE_LIGHT_FLOATING(__VA_ARGS__) DICE_LIGHT_INTEGRAL(__VA_ARGS__)        \
          DICE_LIGHT_DISPATCH_CASE(S1, __VA_ARGS__)                            \
              DICE_LIGHT_DISPATCH_CASE(S2, __VA_ARGS__))
