"""The corpus generator: PyTorch tasks paired with hand-templated CUDA
solutions in the DICE infilling format, over a catalogue of op families
(elementwise, broadcasting, chains, row reductions, normalisations, tiled
matmul, transpose). See docs/corpus.md."""
