# Read by `cmake --graphviz` (scripts/architecture-graph.sh): the graph of
# docs/architecture-deps.svg shows the project's own libraries and tools and
# the links between them, nothing else.
set(GRAPHVIZ_GRAPH_NAME "dice")
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
# LLVM, MLIR, Clang, LibTorch, CUDA, SQLite, nlohmann-json, Threads, dl.
set(GRAPHVIZ_EXTERNAL_LIBS FALSE)
# add_mlir_library's obj.* twins; tablegen (*IncGen) and doc targets are
# custom targets.
set(GRAPHVIZ_OBJECT_LIBS FALSE)
set(GRAPHVIZ_CUSTOM_TARGETS FALSE)
# Interface libraries are wrappers of system ones (TOML++, and a protobuf
# stand-in that LibTorch's CMake package defines) and DiceHeaders, the
# include paths every library links.
set(GRAPHVIZ_INTERFACE_LIBS FALSE)
# Tests and their helpers are not part of the architecture (the script also
# configures with DICE_ENABLE_TESTS off).
set(GRAPHVIZ_IGNORE_TARGETS "^dice-.*-tests$" "^dice-test-worker$"
    "^dice-runtime-test-kernel$")
