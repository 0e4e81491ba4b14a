//===- GroupSource.h - several candidates in one translation unit -*- C++ -*-===//
//
// A light build costs about two CPU-seconds, most of it nvcc's fixed cost
// (its front ends parsing the CUDA headers), not the candidate. Candidates
// of different requests can therefore share one nvcc run: each goes into a
// namespace of its own with its generated entry, the includes of all of
// them are hoisted to the top, and the macros each defines are undefined
// after it. The library that comes out is for checking only (every member
// registers its operator when it is loaded); an accepted candidate gets a
// library of its own (KernelBuild.h).
//
// `#line` directives name each member's text `candidate<i>.cu` and its
// entry `dice_entry<i>.cu`, so a failed group build says which members
// broke it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_KERNELBUILD_GROUPSOURCE_H
#define DICE_KERNELBUILD_GROUPSOURCE_H

#include "dice/VerifierCore/ForwardSignature.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// Why `cudaSource` must be built alone, or empty when it can share a
/// translation unit. Conservative: any preprocessor conditional, `#undef`,
/// `#line` or pragma other than `unroll`/`once` (hoisting includes or
/// undefining macros could change what they mean), and `extern "C"` (a
/// namespace does not isolate C linkage).
std::string groupIneligibility(std::string_view cudaSource);

struct GroupMember {
  std::string fingerprint; ///< distinct within a group: one operator each
  DiceForwardSignature signature;
  std::string cudaSource; ///< eligible (groupIneligibility is empty)
};

/// The namespace member `index` is compiled in.
std::string groupNamespace(size_t index);

/// The translation unit of `members`, in order: hoisted includes (each
/// under the `#line` of the first member that has it), then per member its
/// namespace holding a hidden declaration of dice_forward, the member's
/// text with its include lines blanked (line numbers kept), and its
/// generated light entry; then `#undef` of the member's macros.
std::string groupTranslationUnit(const std::vector<GroupMember> &members);

/// The members a failed group build's output blames: those whose file
/// (`candidate<i>.cu`, `dice_entry<i>.cu`) or namespace (mangled too)
/// occurs on a line that reports an error. Empty when no error line names
/// a member (an error the group as a whole caused).
std::set<size_t> blamedMembers(const std::string &output, size_t members);

} // namespace dice

#endif // DICE_KERNELBUILD_GROUPSOURCE_H
