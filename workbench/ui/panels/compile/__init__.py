"""The Compile dock: did it compile and did it pay off (compile), its Fix-it cards (cards), the compile timeline's
markers and list (timeline), compile time by stage (stages) and the code torch.compile wrote (code)."""
