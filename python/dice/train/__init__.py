"""The compiler side of `dice-train`: task packs from RL tasks
(`prepare`), the byte-level BPE tokenizer of the project's own model
(`bpe`), and plots of the trainer's metrics (`plot`). See docs/corpus.md."""
