"""MkDocs hooks of the user guide (mkdocs.yml): the theme's offline search loads a small WebWorker shim from a CDN
(unpkg); the guide loads its own copy instead (docs/assets/vendor/, MIT), so that it builds and reads with no
network at all."""

from __future__ import annotations

CDN_SHIM = "https://unpkg.com/iframe-worker/shim"
LOCAL_SHIM = "assets/vendor/iframe-worker-shim.js"


def on_post_page(output: str, page, config) -> str:
    """Each page's HTML, the shim taken from the guide's own files (relative to the page: it opens from file://)."""
    depth = page.file.dest_uri.count("/")
    return output.replace(CDN_SHIM, "../" * depth + LOCAL_SHIM)


def on_post_template(output: str, template_name: str, config) -> str:
    """The pages the theme renders on its own (404.html, at the root)."""
    return output.replace(CDN_SHIM, LOCAL_SHIM)
