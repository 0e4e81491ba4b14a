# lit configuration of the DICE compiler's FileCheck suites.
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "DICE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dice_obj_root, "test")
# Inputs are data that tests read, not tests; the other folders belong to the
# gtest and pytest suites.
config.excludes = ["Inputs", "unit", "python", "torch_models", "CMakeLists.txt"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Tool names are also pass names (dice-verify): a name inside a pipeline
# string ("...,dice-verify{...}") is a pass, not the tool.
llvm_config.add_tool_substitutions(
    [ToolSubst(tool, pre=r".-^/\<,(", post="-.{") for tool in config.dice_tools],
    [config.dice_tools_dir])
config.available_features.update(config.dice_tools)

config.substitutions.append(("%dice_src_root", config.dice_src_root))
config.substitutions.append(("%dice_obj_root", config.dice_obj_root))
config.substitutions.append(("%python", config.python_executable))

# GPU suites (test/gpu) declare `REQUIRES: cuda-device`.
if shutil.which("nvidia-smi") and os.system("nvidia-smi -L >/dev/null 2>&1") == 0:
    config.available_features.add("cuda-device")
