"""The window's features: each a controller that owns one kind of work (training, checkpoints, exports, compile
and data insight, search, recorded runs, hosts, the kernel, alerts) and wires its panels, dialogs and the core's
calls; `feedback` is how every one of them tells the user how it went. registry.py lists them; the main window
builds what it lists, each with what the window lends it (parts.WindowParts) and the features it names; a feature
connects the panel signals it answers itself and declares its actions (ui/actions.py)."""
