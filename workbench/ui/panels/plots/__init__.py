"""The Plots dock: the live plots (plots), their data (series), how they are drawn and look (frames, items,
style), the runs compared over them (compared, bands), the markers on the loss plot (alert_markers; the compile
timeline's are the Compile dock's), their text alternatives (table, text) and the headline figures above them."""
