"""Trained ranker models shipped with codenav (``codenav.search.learned``)."""
