"""The window's features: each a controller that owns one kind of work (training, checkpoints, exports, compile
and data insight, search, recorded runs, hosts, the kernel, alerts) and wires its panels, dialogs and the core's
calls; `feedback` is how every one of them tells the user how it went. The main window builds them and passes each
what it needs; they do not reach into each other or into the window."""
