"""The docks' contents, a folder per dock with more than one module (plots, runs, profile, compile, layers) and a
module per dock that is one (setup, dataset, predict, evaluate, log); step_markers and alert_text are shared by the
docks that mark steps and word alerts."""
