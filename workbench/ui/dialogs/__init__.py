"""The window's dialogs: each a window of its own that a feature opens (About, Connect to…, Export model…, the
finders, Runs on this host…, Compare numerics, Repeat with seeds…, Sweep…), shown and answered; none holds state the
window keeps."""
