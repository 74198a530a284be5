"""The instruments that attach to the training loop (fastai's callbacks): each watches a run through the hooks of
`base.Instrument` — the loop never knows what it measures — keeps its own state, emits its own events and hands
back its own section of the run's results. One module each."""
