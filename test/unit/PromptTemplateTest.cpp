//===- PromptTemplateTest.cpp - prompt template files ---------------------===//

#include "dice/Scaffold/PromptTemplate.h"
#include "dice/Scaffold/Scaffold.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dice;

namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path writeTemp(const std::string &name, const std::string &text) {
  fs::path path = fs::temp_directory_path() /
                  ("dice-prompt-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(PromptTemplate, TheBuiltInWordingIsTheTemplateFiles) {
  fs::path dir = DICE_PROMPT_TEMPLATE_DIR;
  EXPECT_EQ(PromptTemplate::builtin(PromptKind::Infill).text(),
            readText(dir / "infill.txt"));
  EXPECT_EQ(PromptTemplate::builtin(PromptKind::EndToEnd).text(),
            readText(dir / "end_to_end.txt"));
  EXPECT_EQ(PromptTemplates::builtin().identity, "");
}

TEST(PromptTemplate, SlotsAreFilledAndTheFinalNewlineDropped) {
  Result<PromptTemplate> t = PromptTemplate::parse(
      PromptKind::Infill, "Program:\n{{reference}}Fill {{function}} between\n"
                          "{{prefix}}and{{suffix}}.\n",
      "t.txt");
  ASSERT_TRUE(t) << t.error().format();
  EXPECT_EQ(t->render({{"reference", "R\n"},
                       {"function", "`f`"},
                       {"prefix", "P"},
                       {"suffix", "S"}}),
            "Program:\nR\nFill `f` between\nPandS.");
  // A slot without a value is empty; literal braces stay.
  Result<PromptTemplate> braces =
      PromptTemplate::parse(PromptKind::EndToEnd, "{x} {{signature}}!", "b.txt");
  ASSERT_TRUE(braces);
  EXPECT_EQ(braces->render({}), "{x} !");
}

TEST(PromptTemplate, BadSlotsAreLocatedErrors) {
  Result<PromptTemplate> unknown = PromptTemplate::parse(
      PromptKind::Infill, "first line\nab {{prefixx}}\n", "mine.txt");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().file, "mine.txt");
  EXPECT_EQ(unknown.error().line, 2u);
  EXPECT_EQ(unknown.error().column, 4u);
  EXPECT_NE(unknown.error().message.find("unknown slot `{{prefixx}}`"),
            std::string::npos);
  EXPECT_NE(unknown.error().message.find("{{suffix}}"), std::string::npos);

  // An end-to-end prompt has no hole: no prefix or suffix to show.
  Result<PromptTemplate> e2e =
      PromptTemplate::parse(PromptKind::EndToEnd, "{{reference}}{{prefix}}", "e.txt");
  ASSERT_FALSE(e2e);
  EXPECT_EQ(e2e.error().column, 14u);
  EXPECT_NE(e2e.error().message.find("end-to-end"), std::string::npos);

  Result<PromptTemplate> open =
      PromptTemplate::parse(PromptKind::Infill, "x\n\n  {{reference", "o.txt");
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().line, 3u);
  EXPECT_EQ(open.error().column, 3u);

  Result<PromptTemplates> missing = PromptTemplates::load("/nonexistent/t.txt", "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().file, "/nonexistent/t.txt");
}

TEST(PromptTemplate, AFileSetHasAnIdentityOfItsText) {
  fs::path a = writeTemp("a.txt", "A {{reference}}\n");
  fs::path b = writeTemp("b.txt", "B {{reference}}\n");
  Result<PromptTemplates> first = PromptTemplates::load(a.string(), "");
  Result<PromptTemplates> again = PromptTemplates::load(a.string(), "");
  Result<PromptTemplates> other = PromptTemplates::load(b.string(), "");
  Result<PromptTemplates> asEndToEnd = PromptTemplates::load("", a.string());
  ASSERT_TRUE(first && again && other && asEndToEnd);
  EXPECT_EQ(first->identity.size(), 16u);
  EXPECT_EQ(first->identity, again->identity);
  EXPECT_NE(first->identity, other->identity);
  // The same text in the other role is another wording of the pair.
  EXPECT_NE(first->identity, asEndToEnd->identity);
  // Where a file is named, even the built-in text's copy is keyed apart:
  // the compiler cannot know the file will not change.
  fs::path copy = writeTemp("copy.txt", PromptTemplate::builtin(PromptKind::Infill).text());
  Result<PromptTemplates> copied = PromptTemplates::load(copy.string(), "");
  ASSERT_TRUE(copied);
  EXPECT_NE(copied->identity, "");
  for (const fs::path &p : {a, b, copy})
    fs::remove(p);
}

TEST(PromptTemplate, TheScaffoldsPromptsAreWordedByTheTemplates) {
  ReferenceProgram program;
  program.inputs.push_back({{4}, DType::Float32});
  RefOp neg;
  neg.fn = RefFn::Neg;
  neg.args = {0};
  neg.type = {{4}, DType::Float32};
  program.outputs = {program.add(neg)};
  ASSERT_EQ(program.validate(), "");
  ScaffoldText builtin = renderScaffold(program, "00112233aabbccdd");

  fs::path infill = writeTemp("infill.txt", "Kernel for:\n{{reference}}--\n{{signature}}\n");
  fs::path e2e = writeTemp("e2e.txt", "Whole program for {{function}}:\n{{reference}}\n");
  Result<PromptTemplates> mine = PromptTemplates::load(infill.string(), e2e.string());
  ASSERT_TRUE(mine) << mine.error().format();
  ScaffoldText worded = renderScaffold(program, "00112233aabbccdd", *mine);
  EXPECT_EQ(worded.infillPrompt,
            chatUserTurn("Kernel for:\n" + builtin.reference + "--\n" + builtin.signature));
  EXPECT_EQ(worded.endToEndPrompt,
            chatUserTurn("Whole program for `" +
                         builtin.signature.substr(0, builtin.signature.size() - 1) +
                         "`:\n" + builtin.reference));
  // The code around the hole is the compiler's, whatever the wording.
  EXPECT_EQ(worded.prefix, builtin.prefix);
  EXPECT_EQ(worded.suffix, builtin.suffix);
  EXPECT_EQ(worded.reference, builtin.reference);
  fs::remove(infill);
  fs::remove(e2e);
}

} // namespace
