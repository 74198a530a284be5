"""The app's resources (icons, the bundled MNIST sample, sample digits, the example model).

This folder sits at the top of the repository and is installed as the package `workbench.resources` (a setuptools
package-dir mapping in pyproject.toml; the PyInstaller spec copies it to the same place). Read it through
`workbench.core.ground.resources.resource_path`, never by a path relative to the source tree.
"""
