"""Widgets (ipywidgets front ends): diagram browser, tuning explorer."""
