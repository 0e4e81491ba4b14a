//===- dice-scaffold-programs.cpp - scaffolds of reference programs -------===//
//
// What dice-scaffold writes for a kernel request, for reference programs
// given directly, one JSON object a line:
//
//   {"program": {...reference program...}, ...}
//     -> {"fingerprint", "signature", "reference", "prefix", "suffix",
//         "infill_prompt", "end_to_end_prompt", ...}
//
// The data engine draws its programs as reference programs and needs, for
// each, exactly the prompt and `dice_forward` signature the compiler writes
// for the same PyTorch program; the passes render them from the same
// functions (fingerprintOf, renderScaffold), after building the program
// from linalg. Neither LLVM nor LibTorch: it runs on a GPU node without
// either (about 1,800 programs a second on one core of the 2-core build
// machine). Keys of the input other than "program" are copied to the
// output line.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/Fingerprint.h"
#include "dice/Scaffold/PromptTemplate.h"
#include "dice/Reference/ReferenceProgram.h"
#include "dice/Scaffold/Scaffold.h"
#include "dice/Support/CommandLine.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

using json = nlohmann::json;

int main(int argc, char **argv) {
  dice::CommandLine cl(
      "dice-scaffold-programs",
      "the scaffold dice-scaffold writes, for reference programs given as "
      "JSON lines",
      "[--infill-template <file>] [--end-to-end-template <file>] [<file>]",
      /*usageExitCode=*/2);
  std::string input = "-", infillTemplate, endToEndTemplate;
  cl.add_option("file", input, "JSON lines of {\"program\": ...} (- or none: stdin)")
      ->type_name("file");
  cl.add_option("--infill-template", infillTemplate,
                "the infill prompt's template (dice.toml's [prompt] infill)")
      ->type_name("file");
  cl.add_option("--end-to-end-template", endToEndTemplate,
                "the end-to-end prompt's template (dice.toml's [prompt] "
                "end_to_end)")
      ->type_name("file");
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;

  dice::Result<dice::PromptTemplates> templates =
      dice::PromptTemplates::load(infillTemplate, endToEndTemplate);
  if (!templates) {
    std::fprintf(stderr, "dice-scaffold-programs: %s\n",
                 templates.error().format().c_str());
    return 1;
  }
  std::ifstream file;
  if (input != "-") {
    file.open(input);
    if (!file) {
      std::fprintf(stderr, "dice-scaffold-programs: error: cannot read %s\n",
                   input.c_str());
      return 1;
    }
  }
  std::istream &in = input == "-" ? std::cin : file;
  std::string where = input == "-" ? "<stdin>" : input;

  std::ios::sync_with_stdio(false);
  std::string line;
  for (unsigned lineNo = 1; std::getline(in, line); ++lineNo) {
    auto fail = [&](const std::string &why) {
      std::fprintf(stderr, "%s:%u: error: %s\n", where.c_str(), lineNo, why.c_str());
      return 1;
    };
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    json entry = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded() || !entry.is_object() || !entry.contains("program"))
      return fail("expected a JSON object with a \"program\"");
    dice::Result<dice::ReferenceProgram> program =
        dice::ReferenceProgram::fromJson(entry["program"].dump());
    if (!program)
      return fail("not a reference program: " + program.error().describe());
    std::string fingerprint = dice::fingerprintOf(*program);
    dice::ScaffoldText text = dice::renderScaffold(*program, fingerprint, *templates);
    entry.erase("program");
    entry["fingerprint"] = fingerprint;
    entry["signature"] = text.signature;
    entry["reference"] = text.reference;
    entry["prefix"] = text.prefix;
    entry["suffix"] = text.suffix;
    entry["infill_prompt"] = text.infillPrompt;
    entry["end_to_end_prompt"] = text.endToEndPrompt;
    // The program as the compiler stores it (canonical JSON).
    entry["program"] = json::parse(program->toJson());
    std::cout << entry.dump() << "\n";
  }
  std::cout.flush();
  return 0;
}
