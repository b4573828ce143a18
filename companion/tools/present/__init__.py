"""Presenting the course: ``make present`` serves every notebook behind one
landing page (:mod:`.serve`), ``make site`` writes the executed course as static HTML
(:mod:`.site`); both list the notebooks as the notebooks describe themselves
(:mod:`.course`, :mod:`.landing`). Teaches no notebook: the instructor's tooling."""
from .course import Entry, course_entries, read_entry
from .landing import landing_notebook, site_index_html
from .serve import prepare_course, serve_course, voila_command
from .site import build_site, execute_notebook, export_html, fetch_widget_renderer

__all__ = ["Entry", "course_entries", "read_entry", "landing_notebook", "site_index_html",
           "prepare_course", "serve_course", "voila_command", "build_site",
           "execute_notebook", "export_html", "fetch_widget_renderer"]
