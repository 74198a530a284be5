"""Entry point of the PyInstaller bundle: the same `workbench` command as the console script."""

import sys

from workbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
