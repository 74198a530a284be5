"""The Profile dock: where the time and the memory go (profile), and its tabs: Ops, Timeline, Memory and AMP."""
