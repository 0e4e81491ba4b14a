//===- CandidateCall.cpp - one call of the candidate and its trace --------===//
//
// Calling the candidate's operator through the dispatcher, collecting the
// CUDA fault it leaves, and the rules that judge the kernels it launched.
//
//===----------------------------------------------------------------------===//

#include "CheckSteps.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

namespace dice {
namespace dynamic_check {

bool isStickyError(cudaError_t error) {
  switch (error) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

/// A sticky error is returned by every later call, clearing or not.
bool contextIsBroken() {
  cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

namespace {

/// Synchronizes and reports the error a call left, if any.
void collectCudaFault(CallResult &call) {
  cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess)
    error = cudaGetLastError();
  if (error == cudaSuccess)
    return;
  call.fault = CudaFault{cudaGetErrorName(error), cudaGetErrorString(error),
                         static_cast<int>(error)};
  call.sticky = isStickyError(error) || contextIsBroken();
}

} // namespace

/// Calls the operator boxed. On the CPU the operator's CUDA kernel is
/// called directly: the inputs carry the CPU key, the library registers
/// only CUDA.
CallResult callOperator(const c10::OperatorHandle &op,
                        const std::vector<at::Tensor> &inputs, bool onCuda) {
  CallResult call;
  std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
  if (onCuda)
    cudaGetLastError();
  try {
    if (onCuda)
      op.callBoxed(&stack);
    else
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CUDA), &stack);
  } catch (const std::exception &e) {
    call.thrown = exceptionMessage(e);
  } catch (...) {
    call.thrown = "an exception that is not a std::exception";
  }
  if (onCuda)
    collectCudaFault(call);
  if (!call.thrown.empty() || call.fault)
    return call;
  if (stack.size() != 1) {
    call.badReturn = "returned " + std::to_string(stack.size()) + " values";
    return call;
  }
  const c10::IValue &value = stack.front();
  if (value.isTensor()) {
    call.results.push_back(value.toTensor());
  } else if (value.isTensorList()) {
    call.results = value.toTensorVector();
  } else {
    call.badReturn = "returned a " + value.tagKind() + ", not tensors";
  }
  return call;
}

//===----------------------------------------------------------------------===//
// Kernel trace rules
//===----------------------------------------------------------------------===//

Json kernelsJson(const KernelTraceResult &trace) {
  Json kernels = Json::array();
  for (const TracedKernel &k : trace.launches)
    kernels.push_back({{"name", k.name},
                       {"module", k.module},
                       {"api", k.api},
                       {"own", k.ownLibrary},
                       {"allowed_plumbing", isAllowedPlumbingKernel(k)},
                       {"current_stream", k.onCurrentStream},
                       {"stream_id", k.ran ? Json(k.streamId) : Json()},
                       {"ran", k.ran}});
  for (const std::string &name : trace.untraced)
    kernels.push_back({{"name", name}, {"module", ""}, {"api", nullptr},
                       {"own", false}, {"untraced", true}, {"ran", true}});
  return kernels;
}

namespace {

std::string kernelLabel(const TracedKernel &k) {
  std::string name = k.name.empty() ? "(unnamed)" : k.name;
  if (name.size() > 160)
    name = name.substr(0, 157) + "...";
  return "`" + name + "`";
}

} // namespace

/// Why the trace makes the candidate deceptive; empty when it does not.
std::string judgeTrace(const KernelTraceResult &trace, int64_t &ownKernels,
                       bool callReturned) {
  ownKernels = 0;
  for (const TracedKernel &k : trace.launches)
    ownKernels += k.ownLibrary;
  if (!trace.untraced.empty()) {
    std::string name = trace.untraced.front();
    if (name.size() > 160)
      name = name.substr(0, 157) + "...";
    return "kernel `" + name +
           "` ran without a launch from the candidate's code (a CUDA graph "
           "or another launch path); launch kernels directly on the current "
           "stream";
  }
  for (const TracedKernel &k : trace.launches)
    if (!k.onCurrentStream)
      return "kernel " + kernelLabel(k) +
             " was launched on another stream than the current one, which "
             "escapes the checks and the timing; launch on "
             "at::cuda::getCurrentCUDAStream()";
  for (const TracedKernel &k : trace.launches) {
    if (k.ownLibrary || isAllowedPlumbingKernel(k))
      continue;
    if (k.driverApi)
      return "kernel " + kernelLabel(k) + " was launched through " + k.api +
             ", not from the candidate's library; only kernels the "
             "candidate's code launches with <<<>>> or cudaLaunchKernel "
             "count as its own";
    return "kernel " + kernelLabel(k) + " of " +
           (k.module.empty() ? std::string("an unknown module")
                             : moduleBaseName(k.module)) +
           " ran: the result must come from the candidate's own kernels, "
           "not from ATen or a vendor library";
  }
  if (ownKernels == 0 && callReturned) {
    std::string ran;
    for (const TracedKernel &k : trace.launches)
      ran += (ran.empty() ? "" : ", ") + kernelLabel(k);
    return "no kernel of its own ran" +
           (ran.empty() ? std::string(" (no kernel ran at all)")
                        : " (only " + ran + ")") +
           "; dice_forward must launch the candidate's kernels";
  }
  return "";
}

} // namespace dynamic_check
} // namespace dice
