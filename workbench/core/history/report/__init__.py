"""The report: a self-contained HTML page (and its JSON twin) rebuilt from the run history — what each run's record
gives it (facts), its sections (sections, compile_section, insight, layers_section), the pieces they share (cells,
html, svgchart, page), writing it (write) — and a sweep's page (sweep). Torch-free, as the history is."""
