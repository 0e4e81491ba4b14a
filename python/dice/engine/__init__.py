"""The data engine: training programs drawn from a grammar in the compiler's
canonical form, their CUDA kernels from composable emitters, honest splits
and a curriculum (docs/corpus.md, "The data engine")."""
