//===- KernelTraceNamesTest.cpp - kernel names as launches give them ------===//
//
// The trace tells a candidate's kernels from others' by their names when a
// launch handle cannot be traced to its library. nvcc gives the host stub
// of a kernel template inside a namespace internal linkage (GCC's `L`
// marker), while the launch names the kernel without it: both spellings
// must meet. Names taken from nm of a shared build (GroupSource.h).
//
//===----------------------------------------------------------------------===//

#include "../../lib/Verifier/Worker/KernelTrace.h"

#include <gtest/gtest.h>

using namespace dice;

namespace {

TEST(KernelTraceNames, InternalLinkageMarkersGo) {
  // A template kernel in a shared build's namespace.
  EXPECT_EQ(withoutInternalLinkage("_ZN13dice_member0_L11relu_kernelIdEEvPKT_PS1_l"),
            "_ZN13dice_member0_11relu_kernelIdEEvPKT_PS1_l");
  EXPECT_EQ(withoutInternalLinkage(
                "_ZN13dice_member0_L11relu_kernelIN10dice_light4HalfEEEvPKT_PS3_l"),
            "_ZN13dice_member0_11relu_kernelIN10dice_light4HalfEEEvPKT_PS3_l");
  // A static function at namespace scope, and nested namespaces.
  EXPECT_EQ(withoutInternalLinkage("_ZL6helperPf"), "_Z6helperPf");
  EXPECT_EQ(withoutInternalLinkage("_ZN1a1bL4funcEv"), "_ZN1a1b4funcEv");
}

TEST(KernelTraceNames, OtherNamesStayAsTheyAre) {
  for (const char *name :
       {"_Z11relu_kernelIdEvPKT_PS0_l", "_ZN13dice_member2_18linear_relu_kernelEPKfS1_S1_Pfiii",
        "relu_kernel", "_Z67__device_stub__ZN13dice_member2_18linear_relu_kernelEPKfS1_S1_Pfiii",
        "_ZN3cub6detailE", "_ZN99short", "_Z", "_ZN", "_ZNL"}) {
    EXPECT_EQ(withoutInternalLinkage(name), name) << name;
  }
  // An `L` that is a name's own first letter is no marker.
  EXPECT_EQ(withoutInternalLinkage("_ZN4Loop3runEv"), "_ZN4Loop3runEv");
}

} // namespace
