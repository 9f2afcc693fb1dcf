"""Renderers: data objects in, HTML/SVG/figures out. They never compile, launch or emulate."""
