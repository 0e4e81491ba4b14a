//===- PromptTemplate.h - the wording of the model's requests ---*- C++ -*-===//
//
// The two user messages the model is shown (kernel infilling, end to end)
// are template files with named slots, `{{reference}}`, `{{prefix}}`,
// `{{suffix}}`, `{{function}}` and `{{signature}}`, so a user of weights
// trained on another wording can give the compiler that wording. The
// project's own templates (lib/Scaffold/templates/) are built in. A
// template set's identity is part of the kernel database key: kernels
// written for one wording are never reused for another.
// Plain C++ (no LLVM, no LibTorch).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SCAFFOLD_PROMPTTEMPLATE_H
#define DICE_SCAFFOLD_PROMPTTEMPLATE_H

#include "dice/Support/Result.h"

#include <map>
#include <string>
#include <vector>

namespace dice {

/// Which message a template writes; each has its own slots.
enum class PromptKind { Infill, EndToEnd };

/// One parsed template: literal text and slots, in order.
class PromptTemplate {
public:
  /// Parses `text` (the file's contents, `sourceName` in errors). One final
  /// newline of the file is not part of the message. An unknown slot, or a
  /// `{{` without its `}}`, is an error with its line and column.
  static Result<PromptTemplate> parse(PromptKind kind, const std::string &text,
                                      const std::string &sourceName);
  static Result<PromptTemplate> load(PromptKind kind, const std::string &path);
  /// The project's own wording.
  static const PromptTemplate &builtin(PromptKind kind);

  /// The message with every slot replaced by its value in `slots` (a slot
  /// without a value is empty).
  std::string render(const std::map<std::string, std::string> &slots) const;

  const std::string &text() const { return source; }

private:
  struct Piece {
    bool slot = false;
    std::string text; ///< the literal, or the slot's name
  };
  std::vector<Piece> pieces;
  std::string source;
};

/// The templates a compile uses, and their identity.
struct PromptTemplates {
  PromptTemplate infill = PromptTemplate::builtin(PromptKind::Infill);
  PromptTemplate endToEnd = PromptTemplate::builtin(PromptKind::EndToEnd);
  /// Empty for the built-in pair; otherwise the first 16 hex digits of the
  /// SHA-256 of both texts. The kernel database key's `prompt_template`.
  std::string identity;

  static const PromptTemplates &builtin();
  /// The built-in templates, with either replaced by a file where its path
  /// is not empty.
  static Result<PromptTemplates> load(const std::string &infillPath,
                                      const std::string &endToEndPath);
};

} // namespace dice

#endif // DICE_SCAFFOLD_PROMPTTEMPLATE_H
