"""What every part of the window leans on and nothing in it owns: work off the GUI thread (tasks), the event loop's
heartbeat and the garbage collector, the focus ring, screen-reader announcements, desktop notifications, file
dialogs that remember their folder, a table dialog's Copy and Close."""
