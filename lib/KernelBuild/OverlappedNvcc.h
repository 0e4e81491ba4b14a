//===- OverlappedNvcc.h - nvcc's host and device front ends at once -*- C++ -*-===//
//
// nvcc runs its steps one after another: the host front end (preprocess,
// cudafe++), then the device one (preprocess, cicc, ptxas, fatbinary), then
// the host compile that embeds the fatbinary, then the link. The two front
// ends do not depend on each other; together they are about two thirds of
// a light build. nvcc --dryrun lists the steps; this runs them from a
// script with the two front ends side by side, which cuts a light build's
// wall time by about the shorter of the two (0.5-0.7 s). Any step list of
// another shape is refused, and the caller runs nvcc itself.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_KERNELBUILD_OVERLAPPEDNVCC_H
#define DICE_KERNELBUILD_OVERLAPPEDNVCC_H

#include <optional>
#include <string>

namespace dice {

/// The bash script that runs the steps of `dryRun` (nvcc --dryrun's
/// stderr) with the two front ends at once, writing their output to
/// `hostLog` and `deviceLog` and then to its own output, host first (both
/// front ends parse the source, so a compile error would otherwise be
/// reported twice). Nothing when the steps are not the expected ones.
std::optional<std::string> overlappedNvccScript(const std::string &dryRun,
                                                const std::string &hostLog,
                                                const std::string &deviceLog);

} // namespace dice

#endif // DICE_KERNELBUILD_OVERLAPPEDNVCC_H
